"""Launch shapes of the fused decode kernels: batch-1 step time of `ZayaDecoder(kernels="triton")` per variant.

    PYTHONPATH=packages/zaya-model/src:packages/zaya-config/src \\
        python3 packages/zaya-model/benchmarks/tune_fused_decode.py --out $OUT/tune   # one GPU, ~2 min

Builds zaya1-base width (random bf16 weights) at --layers, and for the defaults (`decode.fused.TUNING`) and
each variant that changes one of them, records a decoder (compiled inputs and head, one CUDA graph) and times
--tokens steps after a 128-token prompt (bench_decode's CUDA-event timing). Prints the table, fastest first,
and writes tune.json. Needs CUDA (exits saying so without it).
"""

import argparse
import json
import sys
from pathlib import Path

import torch
from bench_decode import seeded_model, time_decoder  # same folder
from zaya_config.atomic import write_text_atomic
from zaya_model import ZayaConfig, ZayaDecoder
from zaya_model.decode import fused as fused_layers

# the plan measured before the options were on (BENCHMARKS.md: 70.6% at 4 layers, 39.1% at 40)
PREVIOUS_PLAN = {"gemv_tile": 8192, "gemv_warps": 4, "router_programs": 32, "router_warps": 4, "router_with_down": 0,
                 "expert_prefetch": 0}  # fmt: skip
VARIANTS: list[dict[str, int]] = [
    {},
    PREVIOUS_PLAN,
    {"pdl": 0},
    {"router_with_down": 0, "router_programs": 32, "router_warps": 4},
    {"expert_prefetch": 0},
    {"gemv_tile": 8192, "gemv_warps": 4},
    {"router_programs": 32},
    {"attention_block_s": 64},
    {"cca_block_o": 32},
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--tokens", type=int, default=256)
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("tune_fused_decode.py needs a CUDA GPU; nothing measured")
        sys.exit(0)
    cfg = ZayaConfig.from_preset("zaya1-base", num_hidden_layers=args.layers)
    model = seeded_model(cfg, "cuda", torch.bfloat16)
    prompt = torch.randint(1, cfg.vocab_size, (1, 128), device="cuda")
    defaults, rows = dict(fused_layers.TUNING), []
    for variant in VARIANTS:
        fused_layers.TUNING.clear()
        fused_layers.TUNING.update({**defaults, **variant})
        decoder = ZayaDecoder(model, 1, 128 + 8 + args.tokens + 1, kernels="triton", compile=True)
        ms = time_decoder(decoder, prompt, 8, args.tokens) * 1e3
        rows.append({"variant": variant, "ms_per_token": ms})
        print(f"  {ms:8.4f} ms/token  {variant or 'defaults'}", flush=True)
    fused_layers.TUNING.clear()
    fused_layers.TUNING.update(defaults)
    rows.sort(key=lambda r: r["ms_per_token"])
    out = {"layers": args.layers, "batch": 1, "device": torch.cuda.get_device_name(), "defaults": defaults,
           "rows": rows}  # fmt: skip
    args.out.mkdir(parents=True, exist_ok=True)
    write_text_atomic(args.out / "tune.json", json.dumps(out, indent=2) + "\n")
    print("fastest first:")
    for row in rows:
        print(f"  {row['ms_per_token']:8.4f}  {row['variant'] or 'defaults'}")


if __name__ == "__main__":
    main()
