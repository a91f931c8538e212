"""Where a batch-1 decode step's time goes: the CUDA kernels of `ZayaDecoder`'s step, by total time.

    python3 packages/zaya-model/benchmarks/profile_decode.py --layers 4 --out $OUT/profile_decode   # one GPU

Builds zaya1-base width (random bf16 weights) at --layers, prefills a 128-token prompt, warms up, then profiles
--steps steps of each implementation (`IMPLS`: the inductor-compiled layers and the fused Triton layers, each
without a graph, so kernels are launched one by one and the profiler sees each, and replayed from its CUDA
graph). Prints per implementation the wall
time per step, the summed kernel time per step (what is left of the wall time is launch gaps and idle GPU) and
the top kernels; writes profile.json under --out. Needs CUDA (exits saying so without it).
"""

import argparse
import json
import sys
from pathlib import Path

import torch
from bench_decode import seeded_model, time_decoder  # same folder
from torch.profiler import ProfilerActivity, profile
from zaya_config.atomic import write_text_atomic
from zaya_model import ZayaConfig, ZayaDecoder

# each without a graph (the profiler sees every launch) and replayed from its CUDA graph
IMPLS = {
    "compiled": dict(compile=True, cuda_graph=False),
    "compiled-graph": dict(compile=True, cuda_graph=True),
    "triton": dict(kernels="triton", compile=True, cuda_graph=False),
    "triton-graph": dict(kernels="triton", compile=True, cuda_graph=True),
}


def profile_step(decoder: ZayaDecoder, prompt: torch.Tensor, steps: int, top: int) -> dict:
    """Wall ms per step (bench_decode's CUDA-event timing, after 8 warm-up steps) and the kernels of `steps`
    more steps, summed per name."""
    wall_ms = time_decoder(decoder, prompt, 8, steps) * 1e3
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(steps):
            decoder.step()
        torch.cuda.synchronize()
    kernels: dict[str, list[float]] = {}
    for event in prof.events():
        if event.device_type == torch.autograd.DeviceType.CUDA:
            kernels.setdefault(event.name, []).append(event.device_time / 1e3)
    rows = sorted(
        ({"kernel": name[:120], "ms_per_step": sum(t) / steps, "calls_per_step": len(t) / steps}
         for name, t in kernels.items()),
        key=lambda r: -r["ms_per_step"],
    )  # fmt: skip
    return {
        "wall_ms_per_step": wall_ms,
        "kernel_ms_per_step": sum(r["ms_per_step"] for r in rows),
        "kernels_per_step": sum(r["calls_per_step"] for r in rows),
        "top": rows[:top],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument(
        "--impls",
        type=lambda s: s.split(","),
        default=list(IMPLS),
        help=f"which of {','.join(IMPLS)} to profile",
    )
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("profile_decode.py needs a CUDA GPU; nothing measured")
        sys.exit(0)
    cfg = ZayaConfig.from_preset("zaya1-base", num_hidden_layers=args.layers)
    model = seeded_model(cfg, "cuda", torch.bfloat16)
    prompt = torch.randint(1, cfg.vocab_size, (1, 128), device="cuda")
    max_len = 128 + 8 + 2 * args.steps + 1
    out: dict = {"layers": args.layers, "batch": 1, "device": torch.cuda.get_device_name()}
    if unknown := sorted(set(args.impls) - set(IMPLS)):
        parser.error(f"--impls {','.join(unknown)}: choose from {','.join(IMPLS)}")
    for impl in args.impls:
        result = profile_step(ZayaDecoder(model, 1, max_len, **IMPLS[impl]), prompt, args.steps, args.top)
        out[impl] = result
        print(f"== {impl}: wall {result['wall_ms_per_step']:.3f} ms/step, kernels {result['kernel_ms_per_step']:.3f} "
              f"ms/step in {result['kernels_per_step']:.0f} launches")  # fmt: skip
        for row in result["top"]:
            print(f"  {row['ms_per_step']:8.4f} ms x{row['calls_per_step']:5.1f}  {row['kernel']}")
    args.out.mkdir(parents=True, exist_ok=True)
    write_text_atomic(args.out / "profile.json", json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()
