"""One-GPU characterization for BENCHMARKS.md: bf16 GEMM sweep, memory bandwidth, roofline, measured preset.

Run on the H200 machine (PYTHONPATH = the repo's packages/*/src; needs torch, numpy, matplotlib only):

    python3 packages/collbench/benchmarks/bench_device.py --out $OUT

and on a CPU, to check it works (tiny sizes): `python3 .../bench_device.py --smoke --out /tmp/x`.

Timing (collbench.timing.measure_us): first >= 2 s of back-to-back 8192^3 matmuls, because the GPU's clock
idles at 345 MHz and ramps up under load; then every point gets 25 ms of untimed calls and 5 batches of
>= 20 ms each (so >= 100 ms of work), timed with CUDA events, median reported (spread in the tables);
random operands; GEMM operand sets rotated until they span 2 x L2, so small GEMMs read from HBM.
Reference: plain torch.matmul at 8192^3, timed the same way just before the sweep (and again after it, to
show the drift); target: the sweep's peak within 5% of it.

GEMM: square M=N=K grid; the N sweeps at M=K=8192 (coarse, 128 apart: wave steps every ~264 columns on 132
SMs with 128x128 tiles; fine, 16 apart: tile steps) and ZAYA1-base's own GEMMs (dims from
packages/zaya-model conf/model/zaya1-base.yaml: hidden 2048, 8 x 128 query, 2 x 128 KV, experts 2048
wide, vocab 262272) at 16384 tokens and 512..8192 tokens per expert.
Bandwidth: copy/read/write/triad from 4 KiB to 8 GiB per buffer (CUDA graphs below 256 MiB so the
cache-resident sizes are not launch-bound); reference: the best torch `copy_` bandwidth past 4 x L2;
target: each kernel's best past 4 x L2 >= 90% of it.

Files (the lent machine hands back at most 8, at most 2 folders deep), by default (`--bundle`):
results.json (summary and every table), gemm.csv (what `sizing.measured_dir` reads),
characterization.png (the four panels), hardware/<profile>-measured.yaml; `--all-plots` adds
plots/gemm.png, plots/membw.png, plots/roofline.png (7 files). `--no-bundle` also writes gemm.json,
membw.csv/json and the three plots.
"""

import argparse
import json
import time
from dataclasses import asdict, replace
from pathlib import Path

import torch
from collbench.characterization_plot import Ceilings, plot_characterization
from collbench.gemm import (
    GemmResult,
    quantization_shapes,
    reference_matmul_tflops,
    run_gemm_sweep,
    square_shapes,
    sustain_matmul,
    transformer_shapes,
)
from collbench.measured import measured_fields, preset_overrides, write_measured_preset
from collbench.membw import MembwResult, large_buffer_bw, run_membw_sweep
from collbench.plots import plot_gemm, plot_membw
from collbench.roofline import plot_roofline
from collbench.sizes import size_sweep
from collbench.tables import write_rows
from collbench.timing import TimingPolicy, device_name, gpu_state
from zaya_config.atomic import write_text_atomic

# H200 SXM datasheet (packages/zaya-config conf/hardware/h200.yaml), for the plots' dashed lines; the SM
# count and L2 size are read off the device when it is a GPU
H200 = {"name": "h200", "bf16_tflops": 989.5, "hbm_gbps": 4800.0, "l2_bytes": 60 << 20, "units": 132}
CPU_SMOKE = {**H200, "name": "cpu", "units": 2, "l2_bytes": 1 << 20}
ZAYA1_BASE = {"hidden_size": 2048, "q_size": 1024, "kv_size": 256, "moe_intermediate_size": 2048, "vocab_size": 262272}
KERNELS = ("copy", "read", "write", "triad")
MAX_BUNDLE_FILES = 7


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


def parse_args() -> argparse.Namespace:
    """Command line."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--smoke", action="store_true", help="tiny sizes on whatever device (CPU is fine)")
    ap.add_argument("--device", default="auto", help="auto, cuda or cpu")
    ap.add_argument("--iters", type=int, default=None, help="minimum calls per timed batch")
    ap.add_argument("--batches", type=int, default=None, help="timed batches per point (median reported)")
    ap.add_argument("--batch-ms", type=float, default=None, help="minimum duration of one timed batch")
    ap.add_argument(
        "--clock-warmup-s",
        type=float,
        default=None,
        help="sustained matmul before the GEMM sweep (a quarter of it before the bandwidth sweep)",
    )
    ap.add_argument(
        "--bundle",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="few files (results.json holds every table; one combined PNG); --no-bundle writes them all",
    )
    ap.add_argument("--all-plots", action="store_true", help="also the individual PNGs under plots/")
    return ap.parse_args()


def timing_setup(args: argparse.Namespace, on_gpu: bool) -> tuple[TimingPolicy, float]:
    """The per-point timing policy and the clock warm-up seconds, from the flags and the device."""
    if on_gpu and not args.smoke:
        policy, warm_s = TimingPolicy.gpu(), 2.0
    else:  # short, but through the same duration-based path as the GPU run
        policy, warm_s = TimingPolicy(min_calls=2, batches=3, batch_s=1e-3, warmup_calls=1, warmup_s=1e-3), 0.05
    overrides = {
        "min_calls": args.iters,
        "batches": args.batches,
        "batch_s": None if args.batch_ms is None else args.batch_ms / 1e3,
    }
    policy = replace(policy, **{k: v for k, v in overrides.items() if v is not None})
    return policy, warm_s if args.clock_warmup_s is None else args.clock_warmup_s


def hardware(device: torch.device, smoke: bool) -> dict[str, object]:
    """Datasheet numbers for the plots, with the SM count and L2 size read off a GPU."""
    if device.type != "cuda" or smoke:
        return dict(CPU_SMOKE)
    props = torch.cuda.get_device_properties(device)
    return {
        **H200,
        "units": props.multi_processor_count,
        "l2_bytes": getattr(props, "L2_cache_size", 0) or H200["l2_bytes"],
    }


def measure(args: argparse.Namespace) -> dict[str, object]:
    """Warm the clock up, time the reference, the GEMM sweep, the reference again, then the bandwidth sweep."""
    use_cuda = args.device == "cuda" or (args.device == "auto" and torch.cuda.is_available())
    device = torch.device("cuda") if use_cuda else torch.device("cpu")
    hw = hardware(device, args.smoke)
    policy, warm_s = timing_setup(args, use_cuda)
    ref_size = 128 if args.smoke else 8192
    rotate = 2 * int(hw["l2_bytes"])
    torch.backends.cuda.matmul.allow_tf32 = False
    if not use_cuda:  # oneDNN's AMX bf16 path took 15-60 ms a call for some 64-wide GEMMs on a sandboxed CPU
        torch.backends.mkldnn.enabled = False
    states = {"idle": gpu_state(device)}
    t0 = time.time()
    warm = [sustain_matmul(device, warm_s, 64 if args.smoke else 8192)]
    states["after_warmup"] = gpu_state(device)
    ref = reference_matmul_tflops(ref_size, "bfloat16", device, 0, 0, policy, rotate)
    gemm = run_gemm_sweep(
        gemm_shapes(args.smoke),
        "bfloat16",
        device,
        0,
        0,
        int(hw["units"]),
        device_name(device),
        policy=policy,
        rotate_bytes=rotate,
    )
    ref_after = reference_matmul_tflops(ref_size, "bfloat16", device, 0, 0, policy, rotate)
    states["after_gemm"] = gpu_state(device)
    t_gemm = time.time() - t0
    if use_cuda:
        torch.cuda.empty_cache()
    warm.append(sustain_matmul(device, warm_s / 4, 64 if args.smoke else 8192))
    sizes = size_sweep("4K", "256K" if args.smoke else "8G", 4.0 if args.smoke else 2.0)
    membw = run_membw_sweep(list(KERNELS), sizes, device, 0, 0, device_label=device_name(device), policy=policy)
    states["end"] = gpu_state(device)
    return {
        "device": device,
        "hw": hw,
        "policy": policy,
        "warmup": warm,
        "gpu_state": states,
        "ref": ref,
        "ref_after": ref_after,
        "ref_size": ref_size,
        "rotate_bytes": rotate,
        "gemm": gemm,
        "membw": membw,
        "t_gemm": t_gemm,
        "t_membw": time.time() - t0 - t_gemm,
    }


def summarize(m: dict[str, object], smoke: bool) -> dict[str, object]:
    """The numbers BENCHMARKS.md reports and the targets' verdicts."""
    gemm: list[GemmResult] = m["gemm"]
    membw: list[MembwResult] = m["membw"]
    hw = m["hw"]
    past_l2 = 0 if smoke else 4 * int(hw["l2_bytes"])
    fields = measured_fields(gemm, membw, past_cache_bytes=past_l2)
    peak = max(gemm, key=lambda r: r.tflops)
    best_copy = large_buffer_bw(membw, "copy", past_l2)
    ratios = {k: large_buffer_bw(membw, k, past_l2) / best_copy for k in KERNELS}
    same = [r for r in gemm if r.family == "square" and r.m == m["ref_size"]]
    sweep = [r for r in gemm if r.family == "n_sweep"]
    worst = min(sweep, key=lambda r: r.tflops) if sweep else None
    return {
        "device": device_name(m["device"]),
        "torch": torch.__version__,
        "smoke": smoke,
        "gemm_seconds": round(m["t_gemm"], 1),
        "membw_seconds": round(m["t_membw"], 1),
        "timing_policy": asdict(m["policy"]),
        "gemm_rotate_bytes": m["rotate_bytes"],
        "clock_warmup": m["warmup"],
        "gpu_state": m["gpu_state"],
        "sm_count": hw["units"],
        "l2_bytes": hw["l2_bytes"],
        "gemm_peak_tflops": peak.tflops,
        "gemm_peak_shape": peak.label,
        "torch_matmul_ref_tflops": m["ref"],
        "torch_matmul_ref_after_tflops": m["ref_after"],
        "torch_matmul_ref_size": m["ref_size"],
        "sweep_same_shape_tflops": same[0].tflops if same else None,
        "gemm_peak_vs_ref": peak.tflops / m["ref"],
        "n_sweep_min_tflops": worst.tflops if worst else None,
        "n_sweep_min_at": worst.label if worst else None,
        "n_sweep_max_tflops": max(r.tflops for r in sweep) if sweep else None,
        "max_batch_spread": max(r.time_us_max / r.time_us_min - 1 for r in gemm + membw),
        "best_copy_gbps": best_copy,
        "bw_vs_best_copy": ratios,
        "measured": fields,
        "targets": {
            "gemm_within_5pct": peak.tflops >= 0.95 * m["ref"],
            "bw_ge_90pct_of_copy": min(ratios.values()) >= 0.9,
        },
    }


def write_outputs(
    m: dict[str, object], summary: dict[str, object], out: Path, bundle: bool, all_plots: bool
) -> list[Path]:
    """Tables, plots, the measured preset and results.json; returns every file written."""
    gemm, membw, hw = m["gemm"], m["membw"], m["hw"]
    on_gpu = m["device"].type == "cuda"
    fields = summary["measured"]
    ceilings = Ceilings(
        measured_tflops=fields["bf16_matmul_flops"] / 1e12,
        memory_gbps={"copy": fields["copy_bw_gbps"] or 0.0, "triad": fields["triad_bw_gbps"] or 0.0},
        reference_tflops=m["ref"],
        reference_label=f"torch.matmul {m['ref_size']}^3",
        datasheet_tflops=hw["bf16_tflops"] if on_gpu else None,
        datasheet_gbps=hw["hbm_gbps"] if on_gpu else None,
        cache_bytes=int(hw["l2_bytes"]),
    )
    files = [write_rows([r.as_row() for r in gemm], out / "gemm.csv", None if bundle else out / "gemm.json")]
    if not bundle:
        files += [out / "gemm.json", write_rows([r.as_row() for r in membw], out / "membw.csv", out / "membw.json")]
        files.append(out / "membw.json")
    title = f"{summary['device']}, torch {summary['torch']}"
    files.append(plot_characterization(gemm, membw, out / "characterization.png", ceilings, title))
    if all_plots or not bundle:
        files.append(plot_gemm(gemm, out / "plots" / "gemm.png", ceilings.datasheet_tflops, m["ref"]))
        files.append(plot_membw(membw, out / "plots" / "membw.png", ceilings.datasheet_gbps, ceilings.cache_bytes))
        files.append(
            plot_roofline(
                gemm,
                out / "plots" / "roofline.png",
                ceilings.measured_tflops,
                ceilings.memory_gbps,
                ceilings.datasheet_tflops,
                ceilings.datasheet_gbps,
            )
        )
    files.append(write_measured_preset(str(hw["name"]), fields, out, source=f"bench_device.py on {summary['device']}"))
    results_path = out / "results.json"
    files.append(results_path)
    summary.update(
        measured_preset=str(files[-2]),
        override=preset_overrides(str(hw["name"]), out),
        files=[str(p.relative_to(out)) for p in files],
        gemm=[r.as_row() for r in gemm],
        membw=[r.as_row() for r in membw],
    )
    write_text_atomic(results_path, json.dumps(summary, indent=1) + "\n")
    return files


def print_summary(s: dict[str, object], m: dict[str, object]) -> None:
    """A short table last, in BENCHMARKS.md's rows (the device tool returns the end of the output)."""
    gemm: list[GemmResult] = m["gemm"]
    print(f"\n{s['device']} (torch {s['torch']}): GEMM {s['gemm_seconds']:.0f} s, bandwidth {s['membw_seconds']:.0f} s")
    print(f"clock warm-up: {s['clock_warmup']}; GPU state: {s['gpu_state']}")
    p = s["timing_policy"]
    print(
        f"timing: {p['batches']} batches x >= {p['batch_s'] * 1e3:g} ms, median; max batch spread {s['max_batch_spread']:.1%}"
    )
    print("| metric | value |\n|---|---|")
    print(f"| sweep peak TFLOP/s ({s['gemm_peak_shape']}) | {s['gemm_peak_tflops']:.1f} |")
    n = s["torch_matmul_ref_size"]
    print(
        f"| torch.matmul {n}^3 TFLOP/s (before / after the sweep) | {s['torch_matmul_ref_tflops']:.1f} / "
        f"{s['torch_matmul_ref_after_tflops']:.1f} |"
    )
    if s["sweep_same_shape_tflops"]:
        print(f"| sweep's own {n}^3 (out=) TFLOP/s | {s['sweep_same_shape_tflops']:.1f} |")
    print(f"| peak / torch.matmul | {s['gemm_peak_vs_ref']:.3f} |")
    if s["n_sweep_min_at"]:
        print(
            f"| N sweep min..max TFLOP/s (min at) | {s['n_sweep_min_tflops']:.0f}..{s['n_sweep_max_tflops']:.0f} "
            f"({s['n_sweep_min_at']}) |"
        )
    model = [r for r in gemm if r.family in ("attention", "lm_head") or (r.family == "expert" and r.m == 2048)]
    if model:
        print(
            "| "
            + " / ".join(r.label for r in model)
            + " TFLOP/s | "
            + " / ".join(f"{r.tflops:.0f}" for r in model)
            + " |"
        )
    for k in KERNELS:
        bw = s["bw_vs_best_copy"][k] * s["best_copy_gbps"]
        print(f"| {k} GB/s past 4 x L2 (vs copy) | {bw:.0f} ({s['bw_vs_best_copy'][k]:.2f}) |")
    print(f"files: {s['files']}")
    print(f"targets: {s['targets']}")


def main() -> None:
    """Run everything, write the files, print the summary table."""
    args = parse_args()
    m = measure(args)
    summary = summarize(m, args.smoke)
    files = write_outputs(m, summary, args.out, args.bundle, args.all_plots)
    if args.bundle and len(files) > MAX_BUNDLE_FILES:
        raise SystemExit(f"bundle wrote {len(files)} files, more than {MAX_BUNDLE_FILES}: {files}")
    print_summary(summary, m)


if __name__ == "__main__":
    main()
