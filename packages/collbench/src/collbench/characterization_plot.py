"""One PNG with the whole single-device characterization as four panels: GEMM throughput, the N sweep
against the tile/wave model, bandwidth curves, and the roofline with the measured ceilings.

One file instead of three because the lent GPU machine hands back only a few files per run.
"""

from dataclasses import dataclass
from pathlib import Path

from collbench.gemm_shapes import GemmResult
from collbench.membw import MembwResult
from collbench.plots import _save, draw_gemm_throughput, draw_membw, draw_n_sweep, plt
from collbench.roofline import draw_roofline


@dataclass(frozen=True)
class Ceilings:
    """The numbers the panels draw as lines: datasheet and measured ceilings, the matmul reference, the L2."""

    measured_tflops: float
    memory_gbps: dict[str, float]
    reference_tflops: float | None = None
    reference_label: str = "torch.matmul"
    datasheet_tflops: float | None = None
    datasheet_gbps: float | None = None
    cache_bytes: int | None = None


def plot_characterization(
    gemm: list[GemmResult], membw: list[MembwResult], path: Path, ceilings: Ceilings, title: str = ""
) -> Path:
    """Write the 2 x 2 panel PNG and return its path."""
    fig, axes = plt.subplots(2, 2, figsize=(14, 10))
    draw_gemm_throughput(
        axes[0][0], gemm, ceilings.datasheet_tflops, ceilings.reference_tflops, ceilings.reference_label
    )
    draw_n_sweep(axes[0][1], gemm)
    draw_membw(axes[1][0], membw, ceilings.datasheet_gbps, ceilings.cache_bytes)
    draw_roofline(
        axes[1][1],
        gemm,
        ceilings.measured_tflops,
        ceilings.memory_gbps,
        ceilings.datasheet_tflops,
        ceilings.datasheet_gbps,
    )
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    return _save(fig, path)
