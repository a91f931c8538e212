"""Data-parallel scaling of zaya-train's own distributed path: DDP, DDP + ZeRO-1 and FSDP2 (bf16 params,
fp32 reduce) over the GPUs of one node, a zaya1-base-width model with 4 layers, Muon, sequence 4096.
Reports tokens/s per GPU, scaling efficiency against one GPU's number (pass it with --single-gpu-tps,
from train_step.py), peak memory per GPU and MFU. Run under torchrun on a multi-GPU machine:

    PYTHONPATH=$(ls -d packages/*/src | tr '\\n' :) python3 -m torch.distributed.run --standalone \\
        --nproc_per_node 4 packages/zaya-train/benchmarks/dp_scaling.py --out $OUT

`--smoke`: zaya1-tiny on CPU with gloo (tested in CI with 2 processes). Imports only torch, numpy and our
torch-only modules (no hydra/omegaconf/zarr). Rank 0 writes scaling.json / scaling.csv.
"""

import argparse
import csv
import json
import time
from pathlib import Path
from types import SimpleNamespace

import torch
import torch.distributed as dist
import torch.nn.functional as F
from train_step import optimizer_cfg, peak_bf16_flops, sync  # same folder: the single-GPU benchmark


def run_strategy(
    strategy: str, zero1: bool, model_cfg, ctx_args: dict, batch: int, seq_len: int, steps: int, precision: str
) -> dict:
    from zaya_model import build_model, flops_per_token
    from zaya_train.distributed import init_distributed, parallelize, set_gradient_sync
    from zaya_train.optim import build_optimizer

    ctx = init_distributed(SimpleNamespace(strategy=strategy, backend="auto", timeout_s=600.0), **ctx_args)
    torch.manual_seed(0)
    model = build_model(model_cfg).to(ctx.device)
    wrapped = parallelize(model, ctx, precision)
    opt = build_optimizer(model, optimizer_cfg("muon"), zero1=zero1)
    for group in opt.param_groups:
        group["lr"] = 1e-4
    gen = torch.Generator(device="cpu").manual_seed(ctx.rank)
    tokens = torch.randint(0, model_cfg.vocab_size, (batch, seq_len + 1), generator=gen).to(ctx.device)
    autocast = torch.autocast(ctx.device.type, dtype=torch.bfloat16, enabled=precision == "bf16")
    if ctx.device.type == "cuda":
        torch.cuda.reset_peak_memory_stats()

    def step() -> None:
        opt.zero_grad(set_to_none=True)
        set_gradient_sync(wrapped, True)
        with autocast:
            logits = wrapped(tokens[:, :-1])
        F.cross_entropy(logits.float().reshape(-1, logits.size(-1)), tokens[:, 1:].reshape(-1)).backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        model.update_router_biases()

    for _ in range(2):
        step()
    sync(ctx.device)
    dist.barrier()
    start = time.perf_counter()
    for _ in range(steps):
        step()
    sync(ctx.device)
    elapsed = torch.tensor([(time.perf_counter() - start) / steps], device=ctx.device)
    dist.all_reduce(elapsed, op=dist.ReduceOp.MAX)  # the slowest rank sets the pace
    tps_per_gpu = batch * seq_len / float(elapsed)
    fpt = flops_per_token(model_cfg, seq_len, training=True)
    peak_mem = torch.cuda.max_memory_allocated() / 2**30 if ctx.device.type == "cuda" else float("nan")
    label = strategy + ("+zero1" if zero1 else "")
    return {
        "strategy": label,
        "world_size": ctx.world_size,
        "batch_per_gpu": batch,
        "seq_len": seq_len,
        "step_ms": float(elapsed) * 1e3,
        "tokens_per_s_per_gpu": tps_per_gpu,
        "tokens_per_s": tps_per_gpu * ctx.world_size,
        "peak_mem_gib": peak_mem,
        "mfu": tps_per_gpu * fpt / peak_bf16_flops() if ctx.device.type == "cuda" else float("nan"),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--smoke", action="store_true")
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--seq-len", type=int, default=4096)
    parser.add_argument("--batch", type=int, default=2, help="sequences per GPU per step")
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--single-gpu-tps", type=float, default=None, help="tokens/s of one GPU, for efficiency")
    args = parser.parse_args()
    from zaya_model import ZayaConfig

    if args.smoke:
        model_cfg, precision, ctx_args = ZayaConfig.from_preset("zaya1-tiny"), "fp32", {"device": "cpu"}
        batch, seq_len, steps = 2, 32, 2
    else:
        model_cfg = ZayaConfig.from_preset("zaya1-base", num_hidden_layers=args.layers)
        precision, ctx_args = "bf16", {"device": "cuda"}
        batch, seq_len, steps = args.batch, args.seq_len, args.steps
    rows = []
    for strategy, zero1 in (("ddp", False), ("ddp", True), ("fsdp", False)):
        try:
            rows.append(run_strategy(strategy, zero1, model_cfg, ctx_args, batch, seq_len, steps, precision))
        except torch.OutOfMemoryError:
            rows.append({"strategy": strategy + ("+zero1" if zero1 else ""), "error": "out of memory"})
            torch.cuda.empty_cache()
    if args.single_gpu_tps:
        for row in rows:
            if "error" not in row:
                row["scaling_efficiency"] = row["tokens_per_s_per_gpu"] / args.single_gpu_tps
    if dist.get_rank() == 0:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "scaling.json").write_text(json.dumps(rows, indent=2))
        keys = sorted({k for row in rows for k in row})
        with open(args.out / "scaling.csv", "w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=keys)
            writer.writeheader()
            writer.writerows(rows)
        print(f"{'strategy':>11} {'GPUs':>4} {'step ms':>9} {'tok/s/GPU':>10} {'tok/s':>10} {'mem GiB':>8} {'MFU':>6}")
        for r in rows:
            if "error" in r:
                print(f"{r['strategy']:>11}  {r['error']}")
                continue
            print(
                f"{r['strategy']:>11} {r['world_size']:>4} {r['step_ms']:>9.1f} {r['tokens_per_s_per_gpu']:>10.0f} "
                f"{r['tokens_per_s']:>10.0f} {r['peak_mem_gib']:>8.1f} {r['mfu']:>6.3f}"
            )
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
