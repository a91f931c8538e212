"""Benchmark: `zaya ckpt convert` end to end, start-up included, against `cp -r` of the same files (CPU).

Issue 43's targets: a small checkpoint (100 MB) converts in <= 1.5x the time of `cp -r` + 0.5 s, a large one at
>= 0.9x `cp`'s throughput. For each size a DCP checkpoint of random bf16 rows is written with torch's own
`dcp.save`, then every round runs, in a shuffled (seeded) order, each job as a fresh process timed from start to
exit: `cp -r SRC`, `zaya ckpt convert SRC DST --to dcp --no-fsync --quiet` (the durability of `cp`; torch-free),
the same conversion on the torch path (`convert(..., torch_free=False)`: what every call paid before the
torch-free path, torch and torch.distributed.checkpoint imported first), and `python -c "import
ckpt_reshape.convert"` (the start-up of the module alone).
Times are medians over `--repeats` rounds after `--warmup` uncounted ones (1), each run after an `os.sync()`.

    python packages/ckpt-reshape/benchmarks/bench_e2e.py --out OUT [--sizes-mb 100,2000] [--repeats 5] [--warmup 1]

Writes OUT/bench_e2e.json and OUT/bench_e2e.png and prints a table.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path


def generate(mb: int, out: Path) -> None:
    """A DCP checkpoint of about `mb` MB: [1024, 1024] bf16 tensors of seeded random rows, by torch's `dcp.save`."""
    import warnings

    import torch
    import torch.distributed.checkpoint as dcp

    g = torch.Generator().manual_seed(0)
    count = max(1, mb * 2**20 // (2 * 2**20))  # 2 MiB each
    model = {f"layers.{i}.weight": torch.randn(1024, 1024, generator=g).to(torch.bfloat16) for i in range(count)}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        dcp.save({"model": model}, checkpoint_id=out, no_dist=True)


_TORCH_PATH = (
    "import sys; from ckpt_reshape.convert import convert; "
    "convert(sys.argv[1], sys.argv[2], 'dcp', durable=False, torch_free=False)"
)


def _zaya() -> str:
    return shutil.which("zaya") or str(Path(sys.executable).parent / "zaya")


def _timed(cmd: list[str]) -> float:
    os.sync()
    start = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def _commit() -> str | None:
    """The repository's commit (with `+dirty` when the work tree differs), None outside a git checkout."""
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True)
        dirty = subprocess.run(["git", "status", "--porcelain", "--", str(Path(__file__).parents[1])],
                               capture_output=True, text=True, check=True).stdout.strip()  # fmt: skip
    except (OSError, subprocess.CalledProcessError):
        return None
    return head.stdout.strip() + ("+dirty" if dirty else "")


def _folder_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def run(out: Path, sizes_mb: list[int], repeats: int, work: Path, warmup: int = 1) -> dict:
    """Every size's medians (seconds) and the targets' verdicts."""
    results: dict = {"sizes": {}, "repeats": repeats, "machine": os.uname().nodename, "cpus": os.cpu_count()}
    results["started_utc"] = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime())
    results["commit"] = _commit()
    results["load_average_start"] = os.getloadavg()
    for mb in sizes_mb:
        src = work / f"src{mb}"
        shutil.rmtree(src, ignore_errors=True)
        generate(mb, src)
        convert = [_zaya(), "ckpt", "convert", str(src)]
        jobs = {
            "cp -r": lambda d, src=src: ["cp", "-r", str(src), str(d)],
            "zaya ckpt convert --no-fsync": lambda d, cmd=convert: [
                *cmd,
                str(d),
                "--to",
                "dcp",
                "--no-fsync",
                "--quiet",
            ],
            "convert, torch path": lambda d, src=src: [sys.executable, "-c", _TORCH_PATH, str(src), str(d)],
            "start-up (import ckpt_reshape.convert)": lambda d: [sys.executable, "-c", "import ckpt_reshape.convert"],
        }
        samples: dict[str, list[float]] = {name: [] for name in jobs}
        for round_no in range(repeats + warmup):
            counted = round_no >= warmup  # warm-up rounds fill the page cache and load the interpreter's files
            order = list(jobs)
            random.Random(round_no).shuffle(order)
            print(
                f"{mb} MB: round {round_no + 1} of {repeats + warmup} ({'counted' if counted else 'warm-up'})",
                file=sys.stderr,
            )
            for name in order:
                dst = work / "dst"
                shutil.rmtree(dst, ignore_errors=True)
                seconds = _timed(jobs[name](dst))
                if counted:
                    samples[name].append(seconds)
            shutil.rmtree(work / "dst", ignore_errors=True)
        medians = {name: statistics.median(values) for name, values in samples.items()}
        cp, zaya = medians["cp -r"], medians["zaya ckpt convert --no-fsync"]
        results["sizes"][str(mb)] = {
            "bytes": _folder_bytes(src),
            "samples_s": samples,
            "median_s": medians,
            "small_target_s": 1.5 * cp + 0.5,
            "small_target_met": zaya <= 1.5 * cp + 0.5,
            "throughput_vs_cp": cp / zaya,
        }
        shutil.rmtree(src, ignore_errors=True)
    results["load_average_end"] = os.getloadavg()
    out.mkdir(parents=True, exist_ok=True)
    (out / "bench_e2e.json").write_text(json.dumps(results, indent=1))
    _plot(results, out / "bench_e2e.png")
    return results


def _plot(results: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sizes = list(results["sizes"])
    names = list(results["sizes"][sizes[0]]["median_s"])
    fig, ax = plt.subplots(figsize=(7, 4))
    width = 0.8 / len(names)
    for i, name in enumerate(names):
        values = [results["sizes"][s]["median_s"][name] for s in sizes]
        ax.bar([j + i * width for j in range(len(sizes))], values, width, label=name)
    ax.set_xticks([j + width for j in range(len(sizes))], [f"{s} MB" for s in sizes])
    ax.set_ylabel("seconds, start to exit (median)")
    ax.set_title("zaya ckpt convert vs cp -r, start-up included")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--sizes-mb", default="100,2000", help="comma-separated checkpoint sizes in MB")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--warmup", type=int, default=1, help="uncounted rounds first")
    parser.add_argument("--workdir", type=Path, default=None, help="where the checkpoints go (default: OUT/work)")
    args = parser.parse_args()
    work = args.workdir or args.out / "work"
    work.mkdir(parents=True, exist_ok=True)
    results = run(args.out, [int(s) for s in args.sizes_mb.split(",")], args.repeats, work, args.warmup)
    from rich.console import Console
    from rich.table import Table

    table = Table("size", "cp -r (s)", "zaya convert (s)", "torch path (s)", "start-up (s)", "<= 1.5x cp + 0.5 s",
                  "throughput vs cp")  # fmt: skip
    for r in results["sizes"].values():
        m = r["median_s"]
        table.add_row(f"{r['bytes'] / 1e6:.0f} MB", f"{m['cp -r']:.2f}", f"{m['zaya ckpt convert --no-fsync']:.2f}",
                      f"{m['convert, torch path']:.2f}", f"{m['start-up (import ckpt_reshape.convert)']:.2f}",
                      "met" if r["small_target_met"] else "not met", f"{r['throughput_vs_cp']:.2f}x")  # fmt: skip
    Console().print(table)


if __name__ == "__main__":
    main()
