"""What one ZAYA layer costs: marginal MFU from two depths in one process, for the model alone and the `Trainer`.

At 8 layers the LM head is 3.22 of zaya1-base's 4.33 training GFLOP per token, so a full-depth MFU at small
depth mostly measures the head. Timing two depths (default 4 and 8) in the same process and taking the
difference isolates the layers: one layer's MFU = its FLOPs (zaya_model.flops_per_token at depth b minus at
depth a, per layer) over (t_b - t_a) / (b - a) per token. The projected 40-layer MFU (zaya1-base's depth) is
flops_per_token(40) over t_a + (40 - a) x that per-layer time. Both paths at zaya1-base width, sequence 4096,
micro-batch 4, compiled blocks:

- `model`: zaya-model alone, bf16 weights, `model.loss(ids, labels)` + backward (bench_model.py's step and timer);
- `Trainer`: built from the `pretrain` service's config as train_step.py builds it (bf16 autocast, fp32 master
  weights, Muon by default, `--global-batch` sequences in micro-batches), each timed step `sampler.next_batch` +
  `Trainer.train_step` (train_step.py's timer), so the optimizer's per-layer share is in the marginal.

`--kernels torch liger` measures each kernel choice (`model.kernels`, zaya_model/kernels.py) in the same
process, the first (the baseline) first. MFU is over the hardware profile's dense bf16 peak (`--hardware`,
h200: 989.5 TFLOP/s, the H100 SXM's too). On a lent GPU (setup.sh's wheels, liger-kernel among them):

    python3 packages/zaya-train/benchmarks/layer_mfu.py --data-dir .bench-data --out $OUT --kernels torch liger \\
        --profile

`--profile` writes layer_mfu_kernels.txt: torch.profiler's top kernels by GPU time of the model alone at the
first depth, per kernel choice. `--smoke` runs zaya1-tiny on CPU at toy sizes (seconds; tested in CI).
Writes layer_mfu.json (`{"meta", "rows"}`, one row per path, kernel choice and precision) and layer_mfu.png.
"""

from __future__ import annotations

import argparse
import gc
import json
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import torch

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parents[1] / "zaya-model" / "benchmarks"))
import bench_model  # noqa: E402  (zaya-model's step function and timer)
import train_step  # noqa: E402  (zaya-train's service-built Trainer and its step timer)

PROJECT_LAYERS = 40  # zaya1-base's depth


def _commit() -> str | None:
    try:
        out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=HERE, capture_output=True, text=True)
        return out.stdout.strip() or None
    except OSError:
        return None


def _free() -> None:
    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()


def model_config(args, layers: int, kernels: str):
    from zaya_model import ZayaConfig

    if args.smoke:
        return ZayaConfig.from_preset("zaya1-tiny", num_hidden_layers=layers, kernels=kernels)
    return ZayaConfig.from_preset("zaya1-base", num_hidden_layers=layers, kernels=kernels)


def model_step(args, cfg, device: torch.device):
    """(model, one fwd + loss + bwd step): on CUDA bf16 weights and compiled blocks, on CPU fp32 and eager."""
    from zaya_model import build_model

    torch.manual_seed(0)
    dtype = torch.bfloat16 if device.type == "cuda" else torch.float32
    model = build_model(cfg).to(device=device, dtype=dtype).train()
    if device.type == "cuda":  # the CPU smoke runs eager: compiling would be most of its seconds
        model.compile_blocks()
    ids = torch.randint(0, cfg.vocab_size, (args.micro_batch, args.seq + 1), device=device)
    return model, bench_model.train_step_fn("ours", model, ids, ids[:, 1:])


def time_model(args, layers: int, kernels: str, device: torch.device) -> dict[str, Any]:
    """Seconds per micro-batch of the model alone and its peak memory."""
    model, step = model_step(args, model_config(args, layers, kernels), device)
    seconds = bench_model.timed(step, args.steps, args.warmup, device)
    peak = torch.cuda.max_memory_allocated() / 2**30 if device.type == "cuda" else None
    del model, step
    _free()
    return {"s_per_token": seconds / (args.micro_batch * args.seq), "peak_gib": peak}


def profile_model(args, kernels: str, device: torch.device, top: int = 25) -> str:
    """torch.profiler's kernels by GPU time over `args.steps` steps of the model alone at the first depth."""
    from torch.profiler import ProfilerActivity, profile

    model, step = model_step(args, model_config(args, args.layers[0], kernels), device)
    for _ in range(args.warmup):
        step()
    train_step.sync(device)
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.type == "cuda" else [])
    with profile(activities=activities) as prof:
        for _ in range(args.steps):
            step()
        train_step.sync(device)
    del model, step
    _free()
    sort = "self_cuda_time_total" if device.type == "cuda" else "self_cpu_time_total"
    title = f"kernels={kernels}: model alone, {args.layers[0]} layers, {args.steps} steps, top {top} by GPU time"
    return title + "\n" + prof.key_averages().table(sort_by=sort, row_limit=top, max_name_column_width=70) + "\n"


def trainer_overrides(args, layers: int, kernels: str) -> list[str]:
    common = [f"model.num_hidden_layers={layers}", f"model.kernels={kernels}", "train.eval.every_steps=1000000",
              f"train.optimizer.name={args.optimizer}", f"train.micro_batch_size={args.micro_batch}",
              f"train.global_batch_size={args.global_batch}"]  # fmt: skip
    if args.smoke:
        return [*common, "model=zaya1-tiny", "hardware=cpu", "train=tiny-cpu", "recipe=tiny-cpu",
                f"recipe.phases.0.seq_len={args.seq}", "train.data.sources.library.max_files=40",
                "train.data.sources.tests.max_files=80", "train.eval.sequences=1",
                "train.data.val_fraction=0.2"]  # fmt: skip
    return ["model=zaya1-base", *common, f"hardware={args.hardware}", "train=h200", "recipe=h200-stdlib",
            f"recipe.phases.0.seq_len={args.seq}", "recipe.phases.0.batch_ramp=null",
            f"recipe.phases.0.global_batch_size={args.global_batch}", f"paths.data_dir={args.data_dir.resolve()}",
            "train.activation_checkpointing=none"]  # fmt: skip


def time_trainer(args, layers: int, kernels: str, run_dir: Path) -> dict[str, Any]:
    """Seconds per token of real Trainer steps (optimizer included) and the peak memory."""
    trainer = train_step.build_trainer(trainer_overrides(args, layers, kernels), run_dir)
    try:
        timing = train_step.time_trainer(trainer, args.steps, args.warmup)
        peak = torch.cuda.max_memory_allocated() / 2**30 if trainer.ctx.device.type == "cuda" else None
        return {"s_per_token": timing["step_ms"] / 1e3 / timing["tokens_per_step"], "peak_gib": peak,
                "optimizer_ms": timing["optimizer_ms"]}  # fmt: skip
    finally:
        trainer.close()
        del trainer
        _free()


def marginal_row(path: str, kernels: str, args, timings: dict[int, dict], hardware, meta: dict) -> dict[str, Any]:
    """The row the issue asks for: per-layer (marginal) MFU, full-depth MFU at each depth, projected 40 layers."""
    from zaya_model import flops_per_token
    from zaya_train.metrics.mfu import peak_flops

    a, b = args.layers
    peak = peak_flops(hardware, "bf16")

    def flops(layers: int) -> float:
        return flops_per_token(model_config(args, layers, "torch"), args.seq, training=True)

    layer_s = (timings[b]["s_per_token"] - timings[a]["s_per_token"]) / (b - a)
    layer_flops = (flops(b) - flops(a)) / (b - a)
    projected_s = timings[a]["s_per_token"] + (PROJECT_LAYERS - a) * layer_s
    return {
        "path": path,
        "kernels": kernels,
        "precision": "bf16",
        "layers_a": a,
        "layers_b": b,
        "micro_batch": args.micro_batch,
        "seq": args.seq,
        "global_batch": args.global_batch if path == "Trainer" else None,
        "optimizer": args.optimizer if path == "Trainer" else None,
        "tokens_per_s_a": 1 / timings[a]["s_per_token"],
        "tokens_per_s_b": 1 / timings[b]["s_per_token"],
        "mfu_a": flops(a) / timings[a]["s_per_token"] / peak,
        "mfu_b": flops(b) / timings[b]["s_per_token"] / peak,
        "layer_ms_per_micro_batch": layer_s * args.micro_batch * args.seq * 1e3,
        "layer_gflop_per_token": layer_flops / 1e9,
        "layer_mfu": layer_flops / layer_s / peak if layer_s > 0 else None,
        "projected_40_mfu": flops(PROJECT_LAYERS) / projected_s / peak if projected_s > 0 else None,
        "peak_gib_b": timings[b]["peak_gib"],
        "peak_flops": peak,
        "device": meta["device"],
        "commit": meta["commit"],
        "date": meta["date"],
    }


def write_results(out: Path, meta: dict, rows: list[dict]) -> None:
    """layer_mfu.json (atomic) and layer_mfu.png, rewritten after every row (a killed run keeps its rows)."""
    from zaya_config.atomic import write_text_atomic

    write_text_atomic(out / "layer_mfu.json", json.dumps({"meta": meta, "rows": rows}, indent=2) + "\n")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    labels = [f"{r['path']}\n{r['kernels']}" for r in rows]
    x = range(len(rows))
    width = 0.2
    for i, (key, name) in enumerate([("mfu_a", f"{meta['layers'][0]} layers"), ("mfu_b", f"{meta['layers'][1]} layers"),
                                     ("layer_mfu", "one layer (marginal)"),
                                     ("projected_40_mfu", f"{PROJECT_LAYERS} layers (projected)")]):  # fmt: skip
        ax.bar([j + (i - 1.5) * width for j in x], [100 * (r[key] or 0) for r in rows], width, label=name)
    ax.set_xticks(list(x), labels, fontsize=8)
    ax.set_ylabel("MFU (% of dense bf16 peak)")
    ax.set_title(f"ZAYA layer MFU, seq {meta['seq']}, micro-batch {meta['micro_batch']}, {meta['device']}", fontsize=9)
    ax.legend(fontsize=7)
    fig.savefig(out / "layer_mfu.png", dpi=110, bbox_inches="tight")
    plt.close(fig)


def print_table(rows: list[dict]) -> None:
    print(f"{'path':<8} {'kernels':<11} {'tok/s a':>9} {'MFU a':>6} {'tok/s b':>9} {'MFU b':>6} {'layer ms':>8} "
          f"{'layer MFU':>9} {'40L MFU':>8}")  # fmt: skip
    pct = lambda v: f"{100 * v:.1f}%" if v is not None else "-"  # noqa: E731
    for r in rows:
        print(f"{r['path']:<8} {r['kernels']:<11} {r['tokens_per_s_a']:>9.0f} {pct(r['mfu_a']):>6} "
              f"{r['tokens_per_s_b']:>9.0f} {pct(r['mfu_b']):>6} {r['layer_ms_per_micro_batch']:>8.2f} "
              f"{pct(r['layer_mfu']):>9} {pct(r['projected_40_mfu']):>8}")  # fmt: skip


def main(argv: list[str] | None = None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--data-dir", type=Path, default=Path("data"), help="stdlib.zarr + stdlib.tokenizer.json")
    parser.add_argument("--smoke", action="store_true", help="zaya1-tiny on CPU at toy sizes, seconds")
    parser.add_argument("--layers", type=int, nargs=2, default=[4, 8], metavar=("A", "B"))
    parser.add_argument("--seq", type=int, default=4096)
    parser.add_argument("--micro-batch", type=int, default=4)
    parser.add_argument("--global-batch", type=int, default=64, help="the Trainer's, in sequences")
    parser.add_argument("--optimizer", default="muon", choices=["adamw", "muon"])
    parser.add_argument("--hardware", default="h200", help="hardware preset giving the bf16 peak")
    parser.add_argument("--kernels", nargs="+", default=["torch"], help="model.kernels choices, baseline first")
    parser.add_argument("--paths", nargs="+", default=["model", "Trainer"], choices=["model", "Trainer"])
    parser.add_argument("--profile", action="store_true", help="top kernels by GPU time -> layer_mfu_kernels.txt")
    parser.add_argument("--commit", default=None,
                        help="the commit to record (default: git HEAD; a lent GPU's copy of the tree may hold a stale one)")  # fmt: skip
    parser.add_argument("--run-dir", type=Path, default=None, help="the Trainer's run folder (default OUT/run)")
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--warmup", type=int, default=3)
    args = parser.parse_args(argv)
    a, b = args.layers
    if not 0 < a < b:
        parser.error(f"--layers A B needs 0 < A < B, got {a} {b}")
    if args.smoke:
        args.layers, args.seq, args.micro_batch, args.global_batch, args.steps, args.warmup = [1, 2], 32, 2, 2, 1, 1
        args.hardware = "cpu"
    elif not torch.cuda.is_available():
        raise SystemExit("no CUDA device: run with --smoke on CPU")
    for kernels in args.kernels:  # a misspelt choice or a missing liger-kernel stops here, before any timing
        model_config(args, a, kernels)
    device = torch.device("cuda" if torch.cuda.is_available() and not args.smoke else "cpu")
    args.out.mkdir(parents=True, exist_ok=True)
    meta = {"device": torch.cuda.get_device_name() if device.type == "cuda" else "cpu", "torch": torch.__version__,
            "date": datetime.now(UTC).isoformat(timespec="seconds"), "commit": args.commit or _commit(), "layers": args.layers,
            "seq": args.seq, "micro_batch": args.micro_batch, "global_batch": args.global_batch,
            "optimizer": args.optimizer, "steps": args.steps, "warmup": args.warmup, "smoke": args.smoke}  # fmt: skip
    from zaya_config.atomic import write_text_atomic

    rows: list[dict] = []
    profiles: list[str] = []
    hardware = train_step.compose_service([f"hardware={args.hardware}"]).hardware
    for path in args.paths:  # the model alone first: the quickest telling numbers
        for kernels in args.kernels:
            timings = {}
            for layers in args.layers:
                print(f"timing {path} kernels={kernels} at {layers} layers", flush=True)
                if path == "model":
                    timings[layers] = time_model(args, layers, kernels, device)
                else:
                    timings[layers] = time_trainer(args, layers, kernels, args.run_dir or args.out / "run")
            rows.append(marginal_row(path, kernels, args, timings, hardware, meta))
            print(json.dumps(rows[-1]), flush=True)
            write_results(args.out, meta, rows)
            if path == "model" and args.profile:
                profiles.append(profile_model(args, kernels, device))
                write_text_atomic(args.out / "layer_mfu_kernels.txt", "\n".join(profiles))
    print_table(rows)
    return rows


if __name__ == "__main__":
    main()
