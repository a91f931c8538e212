"""One characterization run: collectives, GEMM and bandwidth sweeps, plots, measured hardware preset.

Writes into `out_dir`: collectives.csv/.zarr and plots/busbw_<op>.png; gemm.csv/.json and
plots/gemm.png; membw.csv/.json and plots/membw.png; plots/roofline.png;
hardware/<profile>-measured.yaml; summary.json (what ran, the measured ceilings, the override).
"""

import json
import logging
from pathlib import Path

import torch
from zaya_config import HardwareProfile
from zaya_config.atomic import write_text_atomic

from collbench.config import BenchConfig
from collbench.gemm import quantization_shapes, run_gemm_sweep, square_shapes, transformer_shapes
from collbench.measured import field_overrides, measured_fields, preset_overrides, write_measured_preset
from collbench.membw import run_membw_sweep
from collbench.plots import plot_busbw, plot_gemm, plot_membw
from collbench.results_io import write_results
from collbench.roofline import plot_roofline
from collbench.schema import BenchResult
from collbench.sizes import size_sweep
from collbench.tables import write_rows
from collbench.timing import device_name, pick_device

log = logging.getLogger(__name__)


def run_collective_sweep(bench: BenchConfig, out_dir: Path, progress: bool) -> list[BenchResult]:
    """torch.distributed or nccl-tests, by `bench.collectives.backend`."""
    cfg = bench.collectives
    if cfg.backend == "nccl-tests":
        from collbench.nccl_tests import run_nccl_tests

        return run_nccl_tests(cfg, log_dir=out_dir / "nccl-tests-logs")
    from collbench.launch import run_collectives

    return run_collectives(cfg, progress=progress)


def run_characterization(
    bench: BenchConfig, hw: HardwareProfile, out_dir: Path, model: object | None = None, progress: bool = True
) -> dict[str, object]:
    """Run the enabled sweeps and write every table, plot and the measured preset; return the summary."""
    out_dir, plots = Path(out_dir), Path(out_dir) / "plots"
    torch.manual_seed(bench.seed)
    device = pick_device(bench.device)
    label = device_name(device)
    summary: dict[str, object] = {"device": label, "hardware": hw.name, "files": {}}
    files: dict[str, str] = summary["files"]  # type: ignore[assignment]
    collectives: list[BenchResult] = []
    if bench.collectives.enabled:
        collectives = run_collective_sweep(bench, out_dir, progress)
        csv_path, zarr_path = write_results(collectives, out_dir)
        files.update(collectives_csv=str(csv_path), collectives_zarr=str(zarr_path))
        for p in plot_busbw(collectives, plots, hw.intra_node_bw_gbps, "intra-node link"):
            files[p.stem] = str(p)
        log.info("collectives: %d rows, %d wrong", len(collectives), sum(max(r.wrong, 0) for r in collectives))
    gemm = []
    if bench.gemm.enabled:
        g = bench.gemm
        shapes = square_shapes(g.square_sizes) + quantization_shapes(
            g.quant_m, g.quant_k, g.quant_n_min, g.quant_n_max, g.quant_n_step
        )
        if model is not None:
            shapes += transformer_shapes(
                model.hidden_size,
                model.q_size,
                model.kv_size,
                model.moe_intermediate_size,
                g.tokens,
                g.tokens_per_expert,
                model.vocab_size,
            )
        gemm = run_gemm_sweep(shapes, g.dtype, device, g.iters, g.warmup_iters, hw.compute_units, label, progress)
        files["gemm_csv"] = str(write_rows([r.as_row() for r in gemm], out_dir / "gemm.csv", out_dir / "gemm.json"))
        files["gemm_png"] = str(plot_gemm(gemm, plots / "gemm.png", hw.peak_bf16_flops / 1e12))
    membw = []
    if bench.membw.enabled:
        m = bench.membw
        sizes = size_sweep(m.min_bytes, m.max_bytes, m.step_factor)
        membw = run_membw_sweep(
            m.kernels, sizes, device, m.iters, m.warmup_iters, device_label=label, progress=progress
        )
        files["membw_csv"] = str(write_rows([r.as_row() for r in membw], out_dir / "membw.csv", out_dir / "membw.json"))
        files["membw_png"] = str(plot_membw(membw, plots / "membw.png", hw.hbm_bw_gbps, hw.l2_cache_bytes))
    fields = measured_fields(gemm, membw, collectives, past_cache_bytes=4 * hw.l2_cache_bytes)
    if gemm and membw and fields["bf16_matmul_flops"]:
        ceilings = {k: fields[f"{k}_bw_gbps"] or 0.0 for k in ("copy", "triad")}
        files["roofline_png"] = str(
            plot_roofline(
                gemm,
                plots / "roofline.png",
                fields["bf16_matmul_flops"] / 1e12,
                ceilings,
                hw.peak_bf16_flops / 1e12,
                hw.hbm_bw_gbps,
            )
        )
    preset = write_measured_preset(hw.name, fields, out_dir, source=f"collbench on {label}")
    files["measured_preset"] = str(preset)
    summary.update(
        measured=fields, override=preset_overrides(hw.name, out_dir), field_overrides=field_overrides(fields)
    )
    write_text_atomic(out_dir / "summary.json", json.dumps(summary, indent=2) + "\n")
    return summary
