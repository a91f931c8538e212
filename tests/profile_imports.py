"""Import time of the CLI processes the slow tests start: each runs once under `python -X importtime`.

Prints a table (process, wall seconds, seconds spent importing, the three costliest top-level packages) and,
with --json, writes it. tests/README.md records its output. Run from the checkout, in the workspace venv:

    python tests/profile_imports.py                    # every process below
    python tests/profile_imports.py services/compose   # the processes whose name contains a word
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
ZAYA = ["-m", "zaya_cli.app"]
TINY = "recipe.phases.0.tokens=4096 recipe.phases.1.tokens=0 train.data.sources.library.max_files=4 "
TINY += "train.data.sources.tests.max_files=4 train.eval.every_steps=0"

# name -> argv after `python -X importtime` (run in a fresh temporary folder; {repo} is the checkout)
PROCESSES: dict[str, list[str]] = {
    "zaya manta compose": [*ZAYA, "manta", "compose", "a samurai, ukiyo-e", "--catalog", "example", "-o", "p.json"],
    "zaya memsim run": [*ZAYA, "memsim", "run", "ddr4_8gb_x8_3200", "-s", "stream", "-c", "2000", "-o", "out"],
    "zaya memsim rtl": [*ZAYA, "memsim", "rtl", "ddr4_8gb_x8_3200", "-o", "rtl"],
    "zaya bench parse": [
        *ZAYA,
        "bench",
        "parse",
        "{repo}/packages/collbench/tests/fixtures/rccl_tests_mi300x_8gpu_allreduce.txt",
    ],
    "zaya ckpt --help": [*ZAYA, "ckpt", "--help"],
    "zaya eval --help": [*ZAYA, "eval", "--help"],
    "services/compose": ["{repo}/services/compose/main.py", "hydra.run.dir=out"],
    "services/size": ["{repo}/services/size/main.py", "hydra.run.dir=out"],
    "services/memstudy": ["{repo}/services/memstudy/main.py", "model=zaya1-tiny", "hydra.run.dir=out"],
    "services/pretrain --cfg job": ["{repo}/services/pretrain/main.py", "--cfg", "job"],
}

LINE = re.compile(r"import time:\s+(\d+) \|\s+(\d+) \|(\s*)(\S+)")


def profile(name: str, argv: list[str]) -> dict:
    """Run one process under -X importtime; its wall time, total import time and costliest packages."""
    args = [a.replace("{repo}", str(REPO)) for a in argv]
    env = os.environ | {"MPLBACKEND": "Agg", "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    with tempfile.TemporaryDirectory() as work:
        start = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-X", "importtime", *args], cwd=work, env=env, capture_output=True, text=True
        )
        wall = time.perf_counter() - start
    by_package: dict[str, int] = {}
    for match in LINE.finditer(done.stderr):
        package = match.group(4).split(".")[0]
        by_package[package] = by_package.get(package, 0) + int(match.group(1))
    top = sorted(by_package.items(), key=lambda item: -item[1])[:3]
    return {
        "process": name,
        "returncode": done.returncode,
        "wall_s": round(wall, 2),
        "import_s": round(sum(by_package.values()) / 1e6, 2),
        "top": {package: round(us / 1e6, 2) for package, us in top},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("only", nargs="*", help="profile only processes whose name contains one of these")
    parser.add_argument("--json", type=Path, help="also write the rows here")
    args = parser.parse_args()
    chosen = {n: a for n, a in PROCESSES.items() if not args.only or any(word in n for word in args.only)}
    if not chosen:
        sys.exit(f"error: no process matches {args.only}; choose from: {', '.join(PROCESSES)}")
    rows = []
    for number, (name, argv) in enumerate(chosen.items(), 1):
        print(f"[{number}/{len(chosen)}] {name}", file=sys.stderr, flush=True)
        rows.append(profile(name, argv))
    print(f"{'process':32} {'rc':>3} {'wall s':>7} {'import s':>9}  costliest imports (s)")
    for row in rows:
        top = ", ".join(f"{package} {s}" for package, s in row["top"].items())
        print(f"{row['process']:32} {row['returncode']:>3} {row['wall_s']:>7} {row['import_s']:>9}  {top}")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1) + "\n")


if __name__ == "__main__":
    main()
