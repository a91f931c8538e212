"""Muon's optimizer step alone on one GPU, on the real parameters of a zaya1-base-width model: the batched
Newton-Schulz (eager and compiled, several round sizes) against the matrix-by-matrix iteration zaya-train used
before, and fused AdamW for scale. Each variant is timed with CUDA events over a few steps after a warm-up, from the same gradients (copied in
before every step, which the times include: ~2 ms for 8 layers).

    python3 packages/zaya-train/benchmarks/muon_step.py --layers 8 --out $OUT

Writes muon_step.json under --out and prints a table. `--smoke` runs zaya1-tiny on CPU (tested in CI).
"""

import argparse
import json
import math
import statistics
from pathlib import Path

import torch


@torch.no_grad()
def per_parameter_step(params: list[torch.Tensor], steps: int = 5) -> None:
    """The Newton-Schulz cost of the implementation before batching: one call per parameter (a stacked
    parameter's matrices together), in bf16 on CUDA (momentum and decay omitted: the same for every variant)."""
    from zaya_train.optim import newton_schulz

    for p in params:
        p.grad.copy_(newton_schulz(p.grad, steps))
        p.add_(p.grad, alpha=-1e-4 * 0.2 * math.sqrt(max(p.shape[-2], p.shape[-1])))


def time_ms(fn, device: torch.device, steps: int, warmup: int = 2) -> float:
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(steps):
        if device.type == "cuda":
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            fn()
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end))
        else:
            import time

            t0 = time.perf_counter()
            fn()
            times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--layers", type=int, default=8)
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--smoke", action="store_true")
    parser.add_argument("--profile", action="store_true", help="print the batched step's top CUDA kernels")
    args = parser.parse_args()
    from zaya_model import ZayaConfig, build_model
    from zaya_train.config import OptimizerConfig
    from zaya_train.optim import build_optimizer, parameter_groups

    device = torch.device("cpu" if args.smoke else "cuda")
    cfg = ZayaConfig.from_preset("zaya1-tiny" if args.smoke else "zaya1-base", num_hidden_layers=args.layers)
    model = build_model(cfg).to(device)
    gen = torch.Generator(device=device).manual_seed(0)
    grads = {p: torch.randn(p.shape, generator=gen, device=device) for p in model.parameters()}

    def fresh(step):  # Muon leaves its update in p.grad: every timed step starts from the same gradients
        def run() -> None:
            for p, g in grads.items():
                p.grad = g.clone()
            step()

        return run

    muon_params = [
        p for g in parameter_groups(model, OptimizerConfig(name="muon")) if g["use_muon"] for p in g["params"]
    ]
    matrices = sum(p.numel() // (p.shape[-2] * p.shape[-1]) for p in muon_params)
    rows = []

    def add(name: str, fn) -> None:
        ms = time_ms(fn, device, args.steps)
        rows.append({"variant": name, "ms": ms})
        print(f"{name:<40} {ms:>9.1f} ms", flush=True)

    for compile_ns in (False, True) if device.type == "cuda" else (False,):
        for round_elements in (1 << 25, 1 << 27, 1 << 29):
            opt = build_optimizer(model, OptimizerConfig(name="muon"), compile_ns=compile_ns)
            opt.ns_round_elements = round_elements
            for group in opt.param_groups:
                group["lr"] = 1e-4
            name = f"muon batched, rounds of 2^{round_elements.bit_length() - 1} elements"
            add(name + (" compiled" if compile_ns else ""), fresh(opt.step))
    if args.profile and device.type == "cuda":  # where the batched step's time goes, kernel by kernel
        opt = build_optimizer(model, OptimizerConfig(name="muon"))
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU,
                                                torch.profiler.ProfilerActivity.CUDA]) as prof:  # fmt: skip
            fresh(opt.step)()
            torch.cuda.synchronize()
        print(prof.key_averages().table(sort_by="cuda_time_total", row_limit=12), flush=True)
        print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=15), flush=True)
    add("muon per parameter (before batching)", fresh(lambda: per_parameter_step(muon_params)))
    adamw = build_optimizer(model, OptimizerConfig(name="adamw"))
    add("adamw (fused on CUDA)", fresh(adamw.step))
    args.out.mkdir(parents=True, exist_ok=True)
    meta = {"layers": args.layers, "muon_matrices": matrices, "device": str(device), "torch": torch.__version__}
    (args.out / "muon_step.json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=2) + "\n")


if __name__ == "__main__":
    main()
