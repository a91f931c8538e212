"""How long `zaya --help` and `zaya <group> --help` take, end to end (a new process each time, warm file cache).

Best and median of N runs per command, every group listed by `zaya --help`; the target is 0.3 s. Run from the
repo root:

    .venv/bin/python tools/zaya-cli/benchmarks/help_time.py --runs 5 --out /tmp/help_time.json
"""

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import time
from datetime import UTC, datetime
from pathlib import Path

from rich.console import Console
from rich.table import Table
from zaya_config.atomic import write_text_atomic

TARGET_S = 0.3


def seconds(command: list[str], runs: int) -> list[float]:
    subprocess.run(command, capture_output=True, check=True)  # warm the file cache and the bytecode
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run(command, capture_output=True, check=True)
        times.append(time.perf_counter() - started)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    from zaya_cli.app import cli_entry_points

    zaya = shutil.which("zaya") or str(Path(".venv/bin/zaya"))
    commands = [[zaya, "--help"], [zaya, "run", "--help"]] + [[zaya, g, "--help"] for g in sorted(cli_entry_points())]
    rows = []
    for command in commands:
        times = seconds(command, args.runs)
        rows.append(
            {"command": " ".join(["zaya", *command[1:]]), "best_s": min(times), "median_s": statistics.median(times)}
        )
    table = Table(title=f"zaya help, {args.runs} runs each (target {TARGET_S} s)")
    for column in ("command", "best s", "median s"):
        table.add_column(column)
    for row in rows:
        table.add_row(row["command"], f"{row['best_s']:.3f}", f"{row['median_s']:.3f}")
    Console().print(table)
    if args.out:
        result = {"date": datetime.now(UTC).isoformat(timespec="seconds"), "machine": f"{platform.machine()}, "
                  f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}", "target_s": TARGET_S, "rows": rows}  # fmt: skip
        write_text_atomic(args.out, json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
