"""PNG plots people would rather look at than tables: busbw curves, GEMM sweeps, bandwidth curves.

matplotlib with the Agg backend only; every function writes one file and returns its path.
"""

from collections import defaultdict
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
from zaya_config.atomic import write_atomic

from collbench.gemm_shapes import GemmResult
from collbench.membw import MembwResult
from collbench.schema import BenchResult


def _save(fig: plt.Figure, path: Path) -> Path:
    try:
        return write_atomic(path, lambda handle: fig.savefig(handle, format="png", dpi=120, bbox_inches="tight"))
    finally:
        plt.close(fig)


def plot_busbw(
    rows: list[BenchResult], out_dir: Path, link_peak_gbps: float | None = None, link_name: str = "link peak"
) -> list[Path]:
    """One PNG per collective: busbw against message size, a line per (GPU count, dtype, in-place)."""
    by_collective: dict[str, list[BenchResult]] = defaultdict(list)
    for r in rows:
        by_collective[r.collective].append(r)
    paths = []
    for collective, group in sorted(by_collective.items()):
        fig, ax = plt.subplots(figsize=(7, 4.5))
        lines: dict[tuple, list[BenchResult]] = defaultdict(list)
        for r in group:
            lines[(r.n_ranks, r.dtype, r.in_place, r.tool)].append(r)
        for (n, dtype, in_place, tool), pts in sorted(lines.items()):
            pts.sort(key=lambda r: r.size_bytes)
            ax.plot(
                [p.size_bytes for p in pts],
                [p.busbw_gbps for p in pts],
                marker="o",
                ms=3,
                label=f"{n} ranks {dtype} {'in-place' if in_place else 'out-of-place'} ({tool})",
            )
        if link_peak_gbps:
            ax.axhline(link_peak_gbps, color="k", ls="--", lw=1, label=f"{link_name} {link_peak_gbps:g} GB/s")
        ax.set_xscale("log", base=2)
        ax.set_xlabel("message size (bytes)")
        ax.set_ylabel("bus bandwidth (GB/s)")
        ax.set_title(f"{collective}: busbw vs message size")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
        paths.append(_save(fig, Path(out_dir) / f"busbw_{collective}.png"))
    return paths


def draw_gemm_throughput(
    ax: plt.Axes,
    results: list[GemmResult],
    peak_tflops: float | None = None,
    measured_peak_tflops: float | None = None,
    reference_name: str = "torch.matmul 8192^3",
) -> None:
    """TFLOP/s of the square grid (line) and the model's own GEMMs (crosses), with the reference lines."""
    square = sorted((r for r in results if r.family == "square"), key=lambda r: r.m)
    ax.plot([r.m for r in square], [r.tflops for r in square], marker="o", label="square M=N=K")
    for r in results:
        if r.family in ("attention", "expert", "lm_head"):
            ax.scatter([max(r.m, r.n, r.k)], [r.tflops], marker="x", label=f"{r.label} ({r.m}x{r.n}x{r.k})")
    for value, name in ((peak_tflops, "datasheet"), (measured_peak_tflops, reference_name)):
        if value:
            ax.axhline(value, ls="--", lw=1, color="gray" if name == "datasheet" else "k", label=f"{name} {value:.0f}")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("largest dimension")
    ax.set_ylabel("TFLOP/s")
    ax.set_title("GEMM throughput")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=6)


def draw_n_sweep(ax: plt.Axes, results: list[GemmResult]) -> None:
    """The N sweep's TFLOP/s against N, with the tile/wave model scaled to the sweep's best point."""
    sweep = sorted((r for r in results if r.family == "n_sweep"), key=lambda r: r.n)
    if sweep:
        best = max(r.tflops for r in sweep)
        best_eff = max(r.predicted_efficiency for r in sweep)
        ax.plot([r.n for r in sweep], [r.tflops for r in sweep], marker=".", label="measured")
        ax.plot(
            [r.n for r in sweep],
            [best * r.predicted_efficiency / best_eff for r in sweep],
            ls="--",
            label="tile/wave model (scaled)",
        )
        ax.set_title(f"N sweep at M={sweep[0].m}, K={sweep[0].k}")
    ax.set_xlabel("N")
    ax.set_ylabel("TFLOP/s")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7)


def plot_gemm(
    results: list[GemmResult], path: Path, peak_tflops: float | None = None, measured_peak_tflops: float | None = None
) -> Path:
    """Two panels: TFLOP/s of the square grid, and the N sweep with the quantization model scaled to its best."""
    fig, (ax_sq, ax_n) = plt.subplots(1, 2, figsize=(12, 4.5))
    draw_gemm_throughput(ax_sq, results, peak_tflops, measured_peak_tflops)
    draw_n_sweep(ax_n, results)
    return _save(fig, path)


def draw_membw(
    ax: plt.Axes, results: list[MembwResult], datasheet_gbps: float | None = None, cache_bytes: int | None = None
) -> None:
    """Bandwidth against buffer size, a line per kernel; the datasheet ceiling and the L2 size marked."""
    for kernel in sorted({r.kernel for r in results}):
        pts = sorted((r for r in results if r.kernel == kernel), key=lambda r: r.size_bytes)
        ax.plot([p.size_bytes for p in pts], [p.bw_gbps for p in pts], marker="o", ms=3, label=kernel)
    if datasheet_gbps:
        ax.axhline(datasheet_gbps, color="k", ls="--", lw=1, label=f"datasheet {datasheet_gbps:g} GB/s")
    if cache_bytes:
        ax.axvline(cache_bytes, color="gray", ls=":", lw=1, label="L2 size")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("buffer size (bytes)")
    ax.set_ylabel("GB/s")
    ax.set_title("memory bandwidth")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)


def plot_membw(
    results: list[MembwResult], path: Path, datasheet_gbps: float | None = None, cache_bytes: int | None = None
) -> Path:
    """Bandwidth against buffer size, a line per kernel; the datasheet ceiling and the L2 size marked."""
    fig, ax = plt.subplots(figsize=(7, 4.5))
    draw_membw(ax, results, datasheet_gbps, cache_bytes)
    return _save(fig, path)
