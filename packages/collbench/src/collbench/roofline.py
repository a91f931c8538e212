"""Roofline with measured ceilings: min(peak FLOP/s, bandwidth x intensity), GEMM points on top.

The measured compute ceiling is the best GEMM rate; the memory ceilings are the measured copy and
triad bandwidths; datasheet numbers are drawn dashed for comparison.
"""

from pathlib import Path

import numpy as np

from collbench.gemm_shapes import GemmResult
from collbench.plots import _save, plt


def attainable_tflops(intensity: np.ndarray, peak_tflops: float, bw_gbps: float) -> np.ndarray:
    """The roofline: min(peak, bw * intensity) in TFLOP/s."""
    return np.minimum(peak_tflops, bw_gbps * 1e9 * intensity / 1e12)


def draw_roofline(
    ax: plt.Axes,
    gemm: list[GemmResult],
    measured_tflops: float,
    memory_ceilings_gbps: dict[str, float],
    datasheet_tflops: float | None = None,
    datasheet_gbps: float | None = None,
) -> None:
    """The measured rooflines (one per memory ceiling), the datasheet one dashed, and the GEMM points."""
    lo = min([r.intensity_flops_per_byte for r in gemm] + [0.5]) / 2
    hi = max([r.intensity_flops_per_byte for r in gemm] + [1e3]) * 2
    x = np.logspace(np.log10(lo), np.log10(hi), 200)
    for name, bw in sorted(memory_ceilings_gbps.items()):
        if bw > 0:
            ax.plot(
                x,
                attainable_tflops(x, measured_tflops, bw),
                lw=2,
                label=f"measured {name} {bw:.0f} GB/s, {measured_tflops:.0f} TFLOP/s",
            )
    if datasheet_tflops and datasheet_gbps:
        ax.plot(
            x,
            attainable_tflops(x, datasheet_tflops, datasheet_gbps),
            "k--",
            lw=1,
            label=f"datasheet {datasheet_gbps:.0f} GB/s, {datasheet_tflops:.0f} TFLOP/s",
        )
    for family in sorted({r.family for r in gemm}):
        pts = [r for r in gemm if r.family == family]
        ax.scatter([r.intensity_flops_per_byte for r in pts], [r.tflops for r in pts], s=12, label=f"GEMM {family}")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("arithmetic intensity (FLOP/byte)")
    ax.set_ylabel("TFLOP/s")
    ax.set_title("roofline (measured ceilings)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)


def plot_roofline(
    gemm: list[GemmResult],
    path: Path,
    measured_tflops: float,
    memory_ceilings_gbps: dict[str, float],
    datasheet_tflops: float | None = None,
    datasheet_gbps: float | None = None,
) -> Path:
    """Write the roofline PNG."""
    fig, ax = plt.subplots(figsize=(7, 5))
    draw_roofline(ax, gemm, measured_tflops, memory_ceilings_gbps, datasheet_tflops, datasheet_gbps)
    return _save(fig, path)
