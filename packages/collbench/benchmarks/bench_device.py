"""One-GPU characterization for BENCHMARKS.md: bf16 GEMM sweep, memory bandwidth, roofline, measured preset.

Run on the H200 machine (PYTHONPATH = the repo's packages/*/src; needs torch, numpy, matplotlib only):

    python3 packages/collbench/benchmarks/bench_device.py --out $OUT

and on a CPU, to check it works (tiny sizes): `python3 .../bench_device.py --smoke --out /tmp/x`.

GEMM: square M=N=K grid; the N sweeps at M=K=8192 (coarse, 128 apart: wave steps every ~264 columns on 132
SMs with 128x128 tiles; fine, 16 apart: tile steps) and ZAYA1-base's own GEMMs (dims from
packages/zaya-model conf/model/zaya1-base.yaml: hidden 2048, 8 x 128 query, 2 x 128 KV, experts 2048
wide, vocab 262272) at 16384 tokens and 512..8192 tokens per expert. Reference: plain torch.matmul at
8192^3 in the same run; target: the sweep's peak within 5% of it.
Bandwidth: copy/read/write/triad from 4 KiB to 8 GiB per buffer (CUDA graphs below 256 MiB so the
cache-resident sizes are not launch-bound); reference: the best torch `copy_` bandwidth past the L2;
target: each kernel's best past the L2 >= 90% of it.
Writes gemm.csv/json, membw.csv/json, plots/*.png, hardware/<profile>-measured.yaml, results.json.
"""

import argparse
import json
import time
from pathlib import Path

import torch
from collbench.gemm import (
    quantization_shapes,
    reference_matmul_tflops,
    run_gemm_sweep,
    square_shapes,
    transformer_shapes,
)
from collbench.measured import measured_fields, preset_overrides, write_measured_preset
from collbench.membw import large_buffer_bw, run_membw_sweep
from collbench.plots import plot_gemm, plot_membw
from collbench.roofline import plot_roofline
from collbench.sizes import size_sweep
from collbench.tables import write_rows
from collbench.timing import device_name

# H200 SXM datasheet (packages/zaya-config conf/hardware/h200.yaml), for the plots' dashed lines
H200 = {"name": "h200", "bf16_tflops": 989.5, "hbm_gbps": 4800.0, "l2_bytes": 60 << 20, "units": 132}
ZAYA1_BASE = {"hidden_size": 2048, "q_size": 1024, "kv_size": 256, "moe_intermediate_size": 2048, "vocab_size": 262272}


def gemm_shapes(smoke: bool) -> list:
    """The sweep's shapes: tiny on --smoke."""
    if smoke:
        return (
            square_shapes([32, 64, 128])
            + quantization_shapes(64, 64, 32, 160, 32)
            + transformer_shapes(64, 64, 16, 32, 64, 16, 128)
        )
    shapes = square_shapes([256, 512, 1024, 2048, 4096, 6144, 8192, 12288, 16384])
    shapes += quantization_shapes(8192, 8192, 1024, 8192, 128)
    shapes += [s for s in quantization_shapes(8192, 8192, 4096, 4608, 16) if s.n % 128]
    z = ZAYA1_BASE
    shapes += transformer_shapes(
        z["hidden_size"], z["q_size"], z["kv_size"], z["moe_intermediate_size"], 16384, 2048, z["vocab_size"]
    )
    for tpe in (512, 1024, 4096, 8192):
        shapes += [
            s
            for s in transformer_shapes(
                z["hidden_size"], z["q_size"], z["kv_size"], z["moe_intermediate_size"], 16384, tpe
            )
            if s.family == "expert"
        ]
    return shapes


def main() -> None:
    """Run everything, write the files, print the summary table."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--smoke", action="store_true", help="tiny sizes on whatever device (CPU is fine)")
    ap.add_argument("--iters", type=int, default=None)
    ap.add_argument("--device", default="auto", help="auto, cuda or cpu")
    args = ap.parse_args()
    use_cuda = args.device == "cuda" or (args.device == "auto" and torch.cuda.is_available())
    device = torch.device("cuda") if use_cuda else torch.device("cpu")
    hw = H200 if use_cuda and not args.smoke else {**H200, "name": "cpu", "units": 2, "l2_bytes": 1 << 20}
    iters = args.iters or (3 if args.smoke else 20)
    warmup = 1 if args.smoke else 5
    label = device_name(device)
    t0 = time.time()
    torch.backends.cuda.matmul.allow_tf32 = False

    gemm = run_gemm_sweep(gemm_shapes(args.smoke), "bfloat16", device, iters, warmup, hw["units"], label)
    ref_size = 128 if args.smoke else 8192
    ref = reference_matmul_tflops(ref_size, "bfloat16", device, iters, warmup)
    t_gemm = time.time() - t0

    sizes = size_sweep("4K", "256K" if args.smoke else "8G", 2.0 if not args.smoke else 4.0)
    membw = run_membw_sweep(["copy", "read", "write", "triad"], sizes, device, iters, warmup, device_label=label)
    t_membw = time.time() - t0 - t_gemm

    out, plots = args.out, args.out / "plots"
    write_rows([r.as_row() for r in gemm], out / "gemm.csv", out / "gemm.json")
    write_rows([r.as_row() for r in membw], out / "membw.csv", out / "membw.json")
    past_l2 = 0 if args.smoke else 4 * hw["l2_bytes"]
    fields = measured_fields(gemm, membw, past_cache_bytes=past_l2)
    plot_gemm(gemm, plots / "gemm.png", hw["bf16_tflops"] if use_cuda else None, ref)
    plot_membw(membw, plots / "membw.png", hw["hbm_gbps"] if use_cuda else None, hw["l2_bytes"])
    plot_roofline(
        gemm,
        plots / "roofline.png",
        fields["bf16_matmul_flops"] / 1e12,
        {"copy": fields["copy_bw_gbps"] or 0.0, "triad": fields["triad_bw_gbps"] or 0.0},
        hw["bf16_tflops"] if use_cuda else None,
        hw["hbm_gbps"] if use_cuda else None,
    )
    preset = write_measured_preset(hw["name"], fields, out, source=f"bench_device.py on {label}")

    peak = max(r.tflops for r in gemm)
    best_copy = large_buffer_bw(membw, "copy", past_l2)
    ratios = {k: large_buffer_bw(membw, k, past_l2) / best_copy for k in ("copy", "read", "write", "triad")}
    results = {
        "device": label,
        "smoke": args.smoke,
        "gemm_seconds": round(t_gemm, 1),
        "membw_seconds": round(t_membw, 1),
        "gemm_peak_tflops": peak,
        "gemm_peak_shape": next(r.label for r in gemm if r.tflops == peak),
        "torch_matmul_ref_tflops": ref,
        "torch_matmul_ref_size": ref_size,
        "gemm_peak_vs_ref": peak / ref,
        "best_copy_gbps": best_copy,
        "bw_vs_best_copy": ratios,
        "measured": fields,
        "targets": {"gemm_within_5pct": peak >= 0.95 * ref, "bw_ge_90pct_of_copy": min(ratios.values()) >= 0.9},
        "measured_preset": str(preset),
        "override": preset_overrides(hw["name"], out),
    }
    (out / "results.json").write_text(json.dumps(results, indent=2) + "\n")

    print(f"\n{label}: GEMM {t_gemm:.0f} s, bandwidth {t_membw:.0f} s")
    print(f"{'metric':<34}{'value':>14}")
    print(f"{'GEMM peak (' + results['gemm_peak_shape'] + ') TFLOP/s':<34}{peak:>14.1f}")
    print(f"{f'torch.matmul {ref_size}^3 TFLOP/s':<34}{ref:>14.1f}")
    print(f"{'peak / torch.matmul':<34}{peak / ref:>14.3f}")
    for k in ("copy", "read", "write", "triad"):
        bw = large_buffer_bw(membw, k, past_l2)
        print(f"{k + ' GB/s (past L2) / vs copy':<34}{bw:>9.0f} {ratios[k]:>4.2f}")
    sweep = [r for r in gemm if r.family == "n_sweep"]
    if sweep:
        worst = min(sweep, key=lambda r: r.tflops)
        print(
            f"{'N sweep min..max TFLOP/s':<34}{worst.tflops:>7.0f}..{max(r.tflops for r in sweep):.0f} (min at {worst.label})"
        )
    print(f"targets: {results['targets']}")


if __name__ == "__main__":
    main()
