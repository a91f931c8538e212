"""Data-parallel scaling of zaya-train's own `Trainer` (built from the `pretrain` service's config, as
train_step.py builds it): DDP, DDP + ZeRO-1 and FSDP2 (bf16 params, fp32 reduce) over the GPUs of one node,
zaya1-base width, Muon, sequence 4096. Reports tokens/s per GPU, scaling efficiency against one GPU's number
(pass it with --single-gpu-tps, from train_step.py), peak memory per GPU and MFU. Under torchrun:

    python3 -m torch.distributed.run --standalone --nproc_per_node 4 \\
        packages/zaya-train/benchmarks/dp_scaling.py --data-dir data --out $OUT

`--smoke`: zaya1-tiny on CPU with gloo (tested in CI with 2 processes). Rank 0 writes scaling.json / .csv.
"""

import argparse
import csv
import json
from pathlib import Path

import torch
import torch.distributed as dist
from train_step import build_trainer, time_trainer  # same folder: the single-GPU benchmark


def run_strategy(strategy: str, zero1: bool, overrides: list[str], args, run_dir: Path) -> dict:
    from zaya_train.metrics import mfu

    label = strategy + ("+zero1" if zero1 else "")
    trainer = build_trainer(
        [*overrides, f"train.distributed.strategy={strategy}", f"train.distributed.zero1={str(zero1).lower()}"],
        run_dir,
    )
    try:
        timing = time_trainer(trainer, args.steps, args.warmup)
        world = trainer.ctx.world_size
        elapsed = torch.tensor([timing["step_ms"]], device=trainer.ctx.device)
        dist.all_reduce(elapsed, op=dist.ReduceOp.MAX)  # the slowest rank sets the pace
        tokens_per_s = timing["tokens_per_step"] / (float(elapsed) / 1e3)
        row = {
            "strategy": label,
            "world_size": world,
            "global_batch": args.global_batch,
            "micro_batch": args.micro_batch,
            "seq_len": args.seq,
            "step_ms": float(elapsed),
            "optimizer_ms": timing["optimizer_ms"],
            "tokens_per_s": tokens_per_s,
            "tokens_per_s_per_gpu": tokens_per_s / world,
            "mfu": mfu(tokens_per_s, trainer.flops_per_token(args.seq), trainer.hardware, "bf16", world),
        }
        if trainer.ctx.device.type == "cuda":
            row["peak_mem_gib"] = torch.cuda.max_memory_allocated() / 2**30
        return row
    except torch.OutOfMemoryError:
        return {"strategy": label, "error": "out of memory"}
    finally:
        trainer.close()
        if torch.cuda.is_available():
            torch.cuda.empty_cache()


def node_arguments(description: str, micro_batch: int) -> argparse.ArgumentParser:
    """The flags of the one-node benchmarks (this one, ep_hsdp_throughput.py)."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--data-dir", type=Path, default=Path("data"))
    parser.add_argument("--smoke", action="store_true")
    parser.add_argument("--layers", type=int, default=8)
    parser.add_argument("--seq", type=int, default=4096)
    parser.add_argument("--global-batch", type=int, default=64, help="sequences per step over all GPUs")
    parser.add_argument("--micro-batch", type=int, default=micro_batch)
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--warmup", type=int, default=2)
    return parser


def node_overrides(args: argparse.Namespace, smoke_micro_batch: int) -> list[str]:
    """The service overrides of a one-node benchmark: zaya1-base width on H200s, or zaya1-tiny on CPU (--smoke,
    which also shrinks `args`)."""
    if args.smoke:
        args.layers, args.seq, args.global_batch, args.steps, args.warmup = 2, 32, 4, 2, 1
        args.micro_batch = smoke_micro_batch
        return ["model=zaya1-tiny", "hardware=cpu", "train=tiny-cpu", "recipe=tiny-cpu", "recipe.phases.0.seq_len=32",
                "train.global_batch_size=4", f"train.micro_batch_size={smoke_micro_batch}",
                "train.eval.downstream.tasks=[]"]  # fmt: skip
    return ["model=zaya1-base", f"model.num_hidden_layers={args.layers}", "hardware=h200", "train=h200",
            "recipe=h200-stdlib", f"recipe.phases.0.seq_len={args.seq}", "recipe.phases.0.batch_ramp=null",
            f"recipe.phases.0.global_batch_size={args.global_batch}", "train.activation_checkpointing=none",
            f"train.global_batch_size={args.global_batch}", f"train.micro_batch_size={args.micro_batch}",
            f"paths.data_dir={args.data_dir.resolve()}", "train.optimizer.name=muon", "train.eval.downstream.tasks=[]"]  # fmt: skip


def write_rows(out: Path, stem: str, rows: list[dict]) -> None:
    """Rank 0: the rows as `stem`.json and `stem`.csv under `out`."""
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{stem}.json").write_text(json.dumps(rows, indent=2))
    keys = sorted({k for row in rows for k in row})
    with open(out / f"{stem}.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=keys)
        writer.writeheader()
        writer.writerows(rows)


def main() -> None:
    parser = node_arguments(__doc__.splitlines()[0], micro_batch=8)
    parser.add_argument("--single-gpu-tps", type=float, default=None, help="tokens/s of one GPU, for efficiency")
    args = parser.parse_args()
    overrides = node_overrides(args, smoke_micro_batch=2)
    rows = [
        run_strategy(s, z, overrides, args, args.out / "run")
        for s, z in (("ddp", False), ("ddp", True), ("fsdp", False))
    ]
    if args.single_gpu_tps:
        for row in rows:
            if "error" not in row:
                row["scaling_efficiency"] = row["tokens_per_s_per_gpu"] / args.single_gpu_tps
    if dist.get_rank() == 0:
        write_rows(args.out, "scaling", rows)
        print(f"{'strategy':>11} {'GPUs':>4} {'step ms':>9} {'tok/s/GPU':>10} {'tok/s':>10} {'MFU':>6}")
        for r in rows:
            if "error" in r:
                print(f"{r['strategy']:>11}  {r['error']}")
                continue
            print(
                f"{r['strategy']:>11} {r['world_size']:>4} {r['step_ms']:>9.1f} {r['tokens_per_s_per_gpu']:>10.0f} "
                f"{r['tokens_per_s']:>10.0f} {r['mfu']:>6.3f}"
            )
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
