"""Benchmark: reshape and convert a zaya1-base-width checkpoint (random bf16 weights, >= 2 GB) on CPU.

Measures, each conversion in its own child process (peak RSS from `os.wait4`):
  * `cp -r` of the source folder on the same disk (and `cp` + fsync of every file) as the ceiling;
  * ckpt-reshape DCP -> DCP reshaped to dp=4,ep=4,fsdp=1, DCP -> HF safetensors, DCP -> torch.save, DCP -> zarr,
    each durable (every file fsynced before the rename; compare with `cp` + fsync) and with `--no-fsync` (the
    same durability as plain `cp`; compare with `cp`);
  * torch's own `dcp_to_torch_save` on the same source.
Reports throughput against `cp` (target >= 70%) and peak RSS against the largest tensor (target <= 2x; the
RSS of a child that only imports torch and ckpt_reshape is shown too, since it is part of every peak).
Every job runs `--repeats` times, interleaved round by round in a shuffled (seeded) order, after `--warmup`
uncounted rounds (the machine may be shared), each after an `os.sync()`; times are medians, peak RSS the
largest seen, and the ratios to `cp` are taken within each round, then the median.

    python packages/ckpt-reshape/benchmarks/bench_reshape.py --out OUT [--layers 3] [--repeats 3] [--warmup 1]
        [--only REGEX] [--smoke] [--fork]

`--fork` (for smoke checks; the recorded numbers start every child afresh): this process imports torch and
ckpt_reshape once and every Python child but the import baseline is a fork of it running the same script, so
no child pays for an interpreter and its imports (about 2.7 s of CPU each here). A forked child's peak RSS is
not a fresh one's (it counts the parent's pages it maps, not imports of its own), nor is that of `cp`, whose
high-water mark includes the moment before it replaced a fork of this larger process: read no RSS from it.

Writes OUT/bench_reshape.json and OUT/bench_reshape.png and prints a table.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BASELINES = ("cp -r", "cp -r + fsync", "import baseline")  # every run has these: the ratios are against them
BASE = {"vocab": 262272, "hidden": 2048, "heads": 8, "kv_heads": 2, "head_dim": 128, "experts": 16, "ffn": 2048}
SMOKE = {"vocab": 2048, "hidden": 64, "heads": 4, "kv_heads": 2, "head_dim": 16, "experts": 4, "ffn": 64}

_GENERATE = r"""
import sys, json, warnings, torch, torch.distributed.checkpoint as dcp
dims, layers, out = json.loads(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
g = torch.Generator().manual_seed(0)
def rnd(*shape):
    return (torch.randn(*shape, generator=g) * 0.02).to(torch.bfloat16)
D, E, F = dims["hidden"], dims["experts"], dims["ffn"]
q, kv = dims["heads"] * dims["head_dim"], dims["kv_heads"] * dims["head_dim"]
model = {"embed.weight": rnd(dims["vocab"], D), "final_norm.weight": torch.ones(D)}
for i in range(layers):
    p = f"layers.{i}."
    model[p + "attn.qkv.weight"] = rnd(q + 2 * kv, D)
    model[p + "attn.out.weight"] = rnd(D, q)
    model[p + "attn_norm.weight"] = torch.ones(D)
    model[p + "moe_norm.weight"] = torch.ones(D)
    model[p + "moe.router.down.weight"] = rnd(256, D)
    model[p + "moe.experts.gate_up"] = rnd(E, 2 * F, D)
    model[p + "moe.experts.down"] = rnd(E, D, F)
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    dcp.save({"model": model}, checkpoint_id=out, no_dist=True)
print(json.dumps({"largest": max(t.numel() * t.element_size() for t in model.values()),
                  "total": sum(t.numel() * t.element_size() for t in model.values())}))
"""

_CONVERT = r"""
import json, sys
from pathlib import Path
from ckpt_reshape.convert import convert
from ckpt_reshape.layout import ParallelLayout
from ckpt_reshape.splits import table_from_plan
import time
src, dst, fmt, layout, model_config, durable, plan = sys.argv[1:8]
table = table_from_plan(json.loads(plan), "benchmark TP plan") if plan else None
if fmt == "zarr":
    import zarr  # an import, like torch's: start-up cost (~0.4 s), not throughput; the JSON's wall_s includes it
start = time.perf_counter()
convert(Path(src), Path(dst), fmt, ParallelLayout.parse(layout) if layout else None, model_config=model_config or None,
        durable=durable == "1", table=table)
print("WORK_S", time.perf_counter() - start, flush=True)
"""

_NATIVE = r"""
import sys, warnings
from torch.distributed.checkpoint.format_utils import dcp_to_torch_save
import time
start = time.perf_counter()
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    dcp_to_torch_save(sys.argv[1], sys.argv[2])
print("WORK_S", time.perf_counter() - start, flush=True)
"""

_BASELINE = "import torch, ckpt_reshape.convert, ckpt_reshape.formats"

_CP_FSYNC = r"""
import os, subprocess, sys
subprocess.run(["cp", "-r", sys.argv[1], sys.argv[2]], check=True)
for root, _, files in os.walk(sys.argv[2]):
    for name in files:
        fd = os.open(os.path.join(root, name), os.O_RDONLY); os.fsync(fd); os.close(fd)
"""


def _forked(code: str, args: list[str]) -> tuple[int, int]:
    """(pid, read end of its stdout) of a fork of this process that runs `python -c code *args`'s script."""
    sys.stdout.flush()  # nothing buffered here is written twice
    sys.stderr.flush()
    read, write = os.pipe()
    pid = os.fork()
    if pid:
        os.close(write)
        return pid, read
    os.close(read)  # the child: the script as `python -c` would run it, its stdout into the pipe
    os.dup2(write, 1)
    sys.argv, status = ["-c", *args], 0
    try:
        exec(compile(code, "<string>", "exec"), {"__name__": "__main__"})
    except SystemExit as stop:
        status = stop.code if isinstance(stop.code, int) else 1
    except BaseException:
        import traceback

        traceback.print_exc()
        status = 1
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)


def run_child(argv: list[str], fork: bool = False) -> tuple[float, float, int, str]:
    """(wall seconds, seconds of the work itself without interpreter start-up, peak RSS bytes, stdout) of one
    child; `fork`: a `python -c` child runs in a fork of this process instead (see --fork)."""
    start = time.perf_counter()
    if fork and argv[:2] == [sys.executable, "-c"]:
        pid, read = _forked(argv[2], argv[3:])
        out = os.fdopen(read)
    else:
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True)
        pid, out = proc.pid, proc.stdout
    with out:
        stdout = out.read()
    _, status, usage = os.wait4(pid, 0)
    wall = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"child failed ({os.waitstatus_to_exitcode(status)}): {' '.join(argv[:4])}")
    work = [float(line.split()[1]) for line in stdout.splitlines() if line.startswith("WORK_S ")]
    return wall, (work[0] if work else wall), usage.ru_maxrss * 1024, stdout


def folder_bytes(path: Path) -> int:
    """Bytes of a file or of every file under a folder."""
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--layers", type=int, default=3, help="decoder layers (3 at base width is about 2.3 GB)")
    parser.add_argument("--workdir", type=Path, default=None, help="scratch folder on the disk under test")
    parser.add_argument("--smoke", action="store_true", help="tiny widths, for a CI check that the script runs")
    parser.add_argument("--repeats", type=int, default=3, help="interleaved rounds; times are medians, RSS the max")
    parser.add_argument("--warmup", type=int, default=1, help="rounds run first and not counted (cold caches)")
    parser.add_argument("--only", default=None, help="regex: run only matching conversions (cp rows always run)")
    parser.add_argument("--fork", action="store_true", help="Python children fork this process (smoke checks)")
    args = parser.parse_args()
    if args.fork:  # what every forked child then has without importing it (the import baseline still starts afresh)
        exec(_BASELINE)
    args.out.mkdir(parents=True, exist_ok=True)
    if args.workdir is not None:
        args.workdir.mkdir(parents=True, exist_ok=True)
    dims = SMOKE if args.smoke else BASE
    py = sys.executable
    results: dict = {
        "machine": os.uname().nodename,
        "cpus": os.cpu_count(),
        "dims": dims,
        "layers": args.layers,
        "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
        "repeats": args.repeats,
        "warmup": args.warmup,
        "only": args.only,
        "fork": args.fork,
        "runs": {},
    }
    with tempfile.TemporaryDirectory(dir=args.workdir, prefix="bench_reshape_") as tmp:
        work = Path(tmp)
        src = work / "src.dcp"
        *_, generated = run_child([py, "-c", _GENERATE, json.dumps(dims), str(args.layers), str(src)], args.fork)
        sizes = json.loads(generated.strip().splitlines()[-1])
        results.update(
            largest_tensor_bytes=sizes["largest"], tensor_bytes=sizes["total"], source_bytes=folder_bytes(src)
        )
        print(
            f"source {results['source_bytes'] / 1e9:.2f} GB, largest tensor {sizes['largest'] / 1e9:.3f} GB", flush=True
        )
        cfg = json.dumps(
            {
                "model_type": "zaya",
                "vocab_size": dims["vocab"],
                "hidden_size": dims["hidden"],
                "num_hidden_layers": args.layers,
                "num_attention_heads": dims["heads"],
                "num_key_value_heads": dims["kv_heads"],
                "head_dim": dims["head_dim"],
                "num_experts": dims["experts"],
                "moe_intermediate_size": dims["ffn"],
            }
        )
        cfg_path = work / "config.json"
        cfg_path.write_text(cfg)
        jobs = {
            "cp -r": ["cp", "-r", str(src), str(work / "cp.dcp")],
            "cp -r + fsync": [py, "-c", _CP_FSYNC, str(src), str(work / "cpf.dcp")],
            "import baseline": [py, "-c", _BASELINE],
        }
        outputs = {"cp -r": "cp.dcp", "cp -r + fsync": "cpf.dcp"}
        # TP cuts the attention output projection along dim 1 (row parallel): those tensors take the row-block path
        tp_plan = json.dumps({"*.attn.out.weight": "row", "*.attn.qkv.weight": "column", "embed.weight": "column"})
        conversions = {  # name: (output, format, layout, model config, TP plan)
            "reshape dcp->dcp dp=4,ep=4,fsdp": ("r.dcp", "dcp", "dp=4,ep=4,fsdp=1", "", ""),
            "reshape dcp->dcp tp=2,dp=2,fsdp (row-parallel out)": ("t.dcp", "dcp", "dp=2,tp=2,fsdp=1", "", tp_plan),
            "convert dcp->torch": ("o.pt", "torch", "", "", ""),
            "convert dcp->hf": ("o.hf", "hf", "", str(cfg_path), ""),
            "convert dcp->zarr": ("o.zarr", "zarr", "", "", ""),
        }
        for name, (output, fmt, layout, model_config, plan) in conversions.items():
            for suffix, durable in (("", "1"), (" --no-fsync", "0")):
                argv = [py, "-c", _CONVERT, str(src), str(work / output), fmt, layout, model_config, durable, plan]
                jobs[name + suffix] = argv
                outputs[name + suffix] = output
        jobs["dcp_to_torch_save (torch)"] = [py, "-c", _NATIVE, str(src), str(work / "native.pt")]
        outputs["dcp_to_torch_save (torch)"] = "native.pt"
        if args.only:
            jobs = {n: a for n, a in jobs.items() if n in BASELINES or re.search(args.only, n)}
        samples: dict[str, list[tuple[float, float, int, int]]] = {name: [] for name in jobs}
        rounds = [("warm-up", r) for r in range(args.warmup)] + [("round", r) for r in range(args.repeats)]
        for kind, rep in rounds:  # interleaved: every job once per round, so load drifts hit all alike
            order = list(jobs)
            random.Random(rep).shuffle(order)  # no job always runs right after the same other job
            for name in order:
                os.sync()  # start each run with no dirty pages left over from the previous one
                wall, work_s, rss, _ = run_child(jobs[name], args.fork and name != "import baseline")
                written = folder_bytes(work / outputs[name]) if name in outputs else 0
                if kind == "round":
                    samples[name].append((wall, work_s, rss, written))
                label = f"{kind} {rep + 1}/{args.warmup if kind == 'warm-up' else args.repeats}"
                print(
                    f"[{label}] {name:60s} {wall:7.2f} s (work {work_s:7.2f} s)  peak RSS {rss / 1e9:6.3f} GB",
                    flush=True,
                )
                if name in outputs:
                    _remove(work / outputs[name])
        for name, runs in samples.items():
            results["runs"][name] = {
                "wall_s": statistics.median(r[0] for r in runs),
                "work_s": statistics.median(r[1] for r in runs),
                "work_s_samples": [r[1] for r in runs],
                "peak_rss_bytes": max(r[2] for r in runs),
                "bytes_written": runs[-1][3],
            }
    _summarise(results, args.out)


def _remove(path: Path) -> None:
    if path.is_dir():
        shutil.rmtree(path, ignore_errors=True)
    elif path.exists():
        path.unlink()


def _paired(baseline: dict, run: dict) -> float:
    """Median over rounds of baseline time / run time (throughput relative to the baseline in the same round)."""
    return statistics.median(b / r for b, r in zip(baseline["work_s_samples"], run["work_s_samples"], strict=True))


def _summarise(results: dict, out: Path) -> None:
    runs, src_bytes, largest = results["runs"], results["source_bytes"], results["largest_tensor_bytes"]
    cp_bw = src_bytes / runs["cp -r"]["work_s"]
    cpf_bw = src_bytes / runs["cp -r + fsync"]["work_s"]
    base_rss = runs["import baseline"]["peak_rss_bytes"]
    print(
        f"\n{'run':52s} {'GB/s':>6s} {'vs cp':>6s} {'paired':>6s} {'vs cp+fsync':>11s} {'paired':>6s} "
        f"{'RSS/largest':>11s} {'(RSS-import)/largest':>20s}"
    )
    for name, run in runs.items():
        if name == "import baseline":
            continue
        bw = src_bytes / run["work_s"]
        run.update(
            throughput_gbps=bw / 1e9,
            vs_cp=bw / cp_bw,
            vs_cp_fsync=bw / cpf_bw,
            # the same ratios taken round by round (each job against the cp runs of its own round), then the
            # median: a shared machine's drift between rounds cancels out
            vs_cp_paired=_paired(runs["cp -r"], run),
            vs_cp_fsync_paired=_paired(runs["cp -r + fsync"], run),
            rss_over_largest=run["peak_rss_bytes"] / largest,
            rss_minus_import_over_largest=(run["peak_rss_bytes"] - base_rss) / largest,
        )
        print(
            f"{name:52s} {bw / 1e9:6.2f} {run['vs_cp']:6.2f} {run['vs_cp_paired']:6.2f} {run['vs_cp_fsync']:11.2f} "
            f"{run['vs_cp_fsync_paired']:6.2f} "
            f"{run['rss_over_largest']:11.2f} {run['rss_minus_import_over_largest']:20.2f}"
        )
    from zaya_config.atomic import atomic_output  # imported after the runs: the parent stays light while they run

    with atomic_output(out / "bench_reshape.json") as tmp:
        tmp.write_text(json.dumps(results, indent=1))
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return
    names = [n for n in runs if n != "import baseline"]
    fig, (ax1, ax3, ax2) = plt.subplots(1, 3, figsize=(17, 5))
    ax1.barh(names, [runs[n]["throughput_gbps"] for n in names], color="tab:blue")
    ax1.set_xlabel("throughput (GB/s of source bytes, interpreter start-up excluded)")
    ax3.barh(names, [runs[n]["vs_cp_paired"] for n in names], color="tab:green")
    ax3.axvline(0.7, color="red", linestyle="--", label="target 0.7x cp")
    ax3.set_xlabel("throughput / plain cp's, same round (median)")
    ax3.legend()
    ax3.set_yticks([])
    ax2.barh(names, [runs[n]["rss_over_largest"] for n in names], color="tab:orange")
    ax2.axvline(2.0, color="red", linestyle="--", label="target 2x largest tensor")
    ax2.set_xlabel("peak RSS / largest tensor")
    ax2.legend()
    ax2.set_yticks([])
    fig.suptitle(f"ckpt-reshape, {src_bytes / 1e9:.2f} GB zaya1-base-width checkpoint, {results['machine']}")
    fig.tight_layout()
    with atomic_output(out / "bench_reshape.png") as tmp:
        fig.savefig(tmp, dpi=120, format="png")


if __name__ == "__main__":
    main()
