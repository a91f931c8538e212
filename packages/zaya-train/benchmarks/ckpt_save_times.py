"""Checkpoint save time, sync vs async: how long the training loop is blocked, and how long until committed.

    python packages/zaya-train/benchmarks/ckpt_save_times.py --out OUT [--smoke] [--sizes-mb 64 256 1024]

For each state size (fp32 "model" + two AdamW-like moment buffers as "optim", on CUDA when available)
it saves `--repeats` times with `CheckpointManager(async_save=False)` and `(async_save=True)`; the
blocking time is what `save()` takes (async: staging to CPU), the total time runs to the commit
(manifest sha256, rename, `latest`). Writes ckpt_save_times.json and ckpt_save_times.png.
Needs only torch (+ matplotlib for the plot) and the repo's packages/*/src on PYTHONPATH.
"""

from __future__ import annotations

import argparse
import json
import platform
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

import torch
from zaya_train.checkpoint import CheckpointManager


def make_state(size_mb: float, device: torch.device) -> dict:
    """A state of ~size_mb MB: one third weights, two thirds optimizer moments, in 4 MB-ish tensors."""
    numel = int(size_mb * 1e6 / 4 / 3)
    chunk = 1 << 20
    n = max(1, numel // chunk)
    model = {f"layer{i}.weight": torch.randn(chunk, device=device) for i in range(n)}
    optim = {
        "state": {k: {"exp_avg": torch.randn_like(v), "exp_avg_sq": torch.rand_like(v)} for k, v in model.items()},
        "param_groups": [{"lr": 1e-3, "params": list(model)}],
    }
    return {"model": model, "optim": optim, "train": {"step": 0}}


def measure(root: Path, state: dict, async_save: bool, repeats: int) -> list[dict]:
    """Time `repeats` saves; async saves are waited on right away so each total is measured alone."""
    manager = CheckpointManager(root, keep_last=2, async_save=async_save)
    rows = []
    for step in range(1, repeats + 2):
        for tensor in state["model"].values():
            tensor.add_(1.0)  # what a training step would do between saves
        start = time.perf_counter()
        manager.save(step, state)
        blocking = time.perf_counter() - start
        manager.wait()
        total = time.perf_counter() - start
        if step > 1:  # the first save warms up thread pools and allocations
            rows.append({"blocking_s": blocking, "total_s": total})
    manager.close()
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--sizes-mb", type=float, nargs="+", default=[64.0, 256.0, 1024.0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--dir", type=Path, default=None, help="where checkpoints go (default: a temp dir)")
    parser.add_argument("--smoke", action="store_true", help="one small size, one repeat")
    args = parser.parse_args()
    if args.smoke:
        args.sizes_mb, args.repeats = [8.0], 1
    args.out.mkdir(parents=True, exist_ok=True)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    scratch = Path(tempfile.mkdtemp(prefix="ckpt-bench-", dir=args.dir))
    results = []
    try:
        for size in args.sizes_mb:
            state = make_state(size, device)
            for async_save in (False, True):
                rows = measure(scratch / f"{size:g}-{async_save}", state, async_save, args.repeats)
                results.append({
                    "size_mb": size, "mode": "async" if async_save else "sync", "device": device.type,
                    "blocking_s": min(r["blocking_s"] for r in rows), "total_s": min(r["total_s"] for r in rows),
                    "runs": rows,
                })  # fmt: skip
            del state
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    meta = {"host": platform.node(), "torch": torch.__version__, "device": device.type,
            "gpu": torch.cuda.get_device_name() if device.type == "cuda" else None}  # fmt: skip
    (args.out / "ckpt_save_times.json").write_text(json.dumps({"meta": meta, "results": results}, indent=1))
    _plot(results, args.out / "ckpt_save_times.png")
    print(f"{'size MB':>8} {'mode':>6} {'blocking s':>11} {'total s':>9}  ({device.type}, best of {args.repeats})")
    for r in results:
        print(f"{r['size_mb']:>8g} {r['mode']:>6} {r['blocking_s']:>11.3f} {r['total_s']:>9.3f}")


def _plot(results: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.5))
    for mode, color in (("sync", "#1f77b4"), ("async", "#ff7f0e")):
        rows = [r for r in results if r["mode"] == mode]
        sizes = [r["size_mb"] for r in rows]
        ax.plot(sizes, [r["total_s"] for r in rows], "o-", color=color, label=f"{mode}: until committed")
        ax.plot(sizes, [r["blocking_s"] for r in rows], "s--", color=color, label=f"{mode}: loop blocked")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("checkpoint size (MB)")
    ax.set_ylabel("seconds")
    ax.set_title("CheckpointManager save time")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


if __name__ == "__main__":
    main()
