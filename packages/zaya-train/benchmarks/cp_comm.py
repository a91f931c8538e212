"""Communication volume of context parallelism per 32k sequence, computed from the model config (CPU, seconds):
zaya-model's all-gather of CCA's compressed K/V against ring attention, on 2, 4 and 8 GPUs, without and with
activation checkpointing, beside the FLOPs each rank computes for the same sequence (zaya_model.cp_traffic,
zaya_model.flops_per_token) and the link and FLOP peaks of a hardware profile.

    python packages/zaya-train/benchmarks/cp_comm.py --out packages/zaya-train/benchmarks/results/cp_comm_32k.json

Bytes are what one rank sends (and receives) per sequence, forward + backward (ring-algorithm collectives); a
training step moves them once per sequence its CP group trains.
"""

import argparse
import json
from pathlib import Path

from zaya_config import hardware
from zaya_config.atomic import write_text_atomic
from zaya_model import ZayaConfig, flops_per_token
from zaya_model.cp_traffic import SCHEMES, context_parallel_traffic

GIB = 2**30


def rows(model: str, seq_len: int, sizes: list[int], hw_name: str) -> list[dict]:
    """One row per (cp size, scheme, activation checkpointing)."""
    cfg = ZayaConfig.from_preset(model)
    hw = hardware(hw_name)
    flops = flops_per_token(cfg, seq_len, training=True) * seq_len
    out = []
    for n in sizes:
        for recompute in (False, True):
            for scheme in SCHEMES:
                t = context_parallel_traffic(cfg, seq_len, n, scheme=scheme, recompute=recompute)
                rank_flops = flops / n * (4 / 3 if recompute else 1)  # full recomputation: one more forward
                comm_s, compute_s = t.total / (hw.intra_node_bw_gbps * 1e9), rank_flops / hw.peak_bf16_flops
                out.append({**t.to_dict(), "model": model, "activation_checkpointing": recompute,
                            "total_gib": t.total / GIB, "rank_tflop": rank_flops / 1e12,
                            "flop_per_byte": rank_flops / t.total, "comm_s_at_link_peak": comm_s,
                            "compute_s_at_bf16_peak": compute_s, "hardware": hw_name})  # fmt: skip
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--model", default="zaya1-base")
    parser.add_argument("--seq-len", type=int, default=32768)
    parser.add_argument("--cp", type=int, nargs="+", default=[2, 4, 8])
    parser.add_argument("--hardware", default="h200")
    args = parser.parse_args()
    table = rows(args.model, args.seq_len, args.cp, args.hardware)
    print("cp  ckpt  scheme      K/V fwd GiB  K/V bwd GiB  halo MiB  total GiB  rank TFLOP  FLOP/byte  comm/compute")
    for r in table:
        print(f"{r['cp_size']:<3} {'yes' if r['activation_checkpointing'] else 'no':<5} {r['scheme']:<11} "
              f"{r['kv_forward'] / GIB:11.3f}  {r['kv_backward'] / GIB:11.3f}  {r['halo'] / 2**20:8.3f}  "
              f"{r['total_gib']:9.3f}  {r['rank_tflop']:10.1f}  {r['flop_per_byte']:9.0f}  "
              f"{r['comm_s_at_link_peak'] / r['compute_s_at_bf16_peak']:12.3f}")  # fmt: skip
    args.out.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(args.out, json.dumps({"seq_len": args.seq_len, "rows": table}, indent=2) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
