"""How long a GEMM or a memory-bound step takes on a hardware profile, from rules or from measured tables.

Rules: achieved rate = peak x tile/wave quantization efficiency, capped by the roofline
(bandwidth x intensity). Measured: the nearest shape of a characterize run's GEMM table (in log space),
corrected by the ratio of the two shapes' quantization efficiencies, and still capped by the
roofline. Every GEMM also pays a fixed kernel overhead. Peak and bandwidth are the profile's measured ceilings when present, else the datasheet's.
"""

import csv
import math
from dataclasses import dataclass, field
from pathlib import Path

from zaya_config import HardwareProfile

from collbench.errors import CollbenchError
from collbench.gemm_shapes import GemmResult, GemmShape, quantization_efficiency


@dataclass
class HardwareEstimator:
    """Time estimates for GEMMs and byte traffic on one accelerator."""

    hw: HardwareProfile
    gemm_table: list[GemmResult] = field(default_factory=list)
    tile_m: int = 128
    tile_n: int = 128
    kernel_overhead_s: float = 4e-6  # launch and tail of one GEMM kernel: why many tiny experts cost more

    @property
    def peak_flops(self) -> float:
        """Measured bf16 matmul rate if known, else the datasheet peak."""
        return self.hw.measured.bf16_matmul_flops or self.hw.peak_bf16_flops

    @property
    def bw_bytes_per_s(self) -> float:
        """Measured copy bandwidth if known, else the datasheet HBM bandwidth."""
        return (self.hw.measured.copy_bw_gbps or self.hw.hbm_bw_gbps) * 1e9

    def efficiency(self, m: int, n: int, k: int) -> float:
        """Tile/wave quantization efficiency on this profile's compute units."""
        return quantization_efficiency(
            m, n, k, self.hw.compute_units, self.tile_m, self.tile_n, tile_k=max(16, self.hw.matmul_tile)
        )

    def gemm_flops_rate(self, m: int, n: int, k: int) -> float:
        """Achieved FLOP/s of one [m,k]x[k,n] bf16 GEMM."""
        shape = GemmShape(m, n, k)
        roof = self.bw_bytes_per_s * shape.flops / shape.bytes_moved(2)
        if self.gemm_table:
            near = self.gemm_table[nearest_row(self.gemm_table, m, n, k)]
            rate = near.tflops * 1e12 * self.efficiency(m, n, k) / self.efficiency(near.m, near.n, near.k)
        else:
            rate = self.peak_flops * self.efficiency(m, n, k)
        return min(rate, roof, self.peak_flops)

    def gemm_time_s(self, m: int, n: int, k: int) -> float:
        """Seconds for one GEMM (0 for an empty one)."""
        if min(m, n, k) <= 0:
            return 0.0
        return self.kernel_overhead_s + 2.0 * m * n * k / self.gemm_flops_rate(m, n, k)

    def memory_time_s(self, n_bytes: float) -> float:
        """Seconds to stream `n_bytes` at the bandwidth ceiling."""
        return n_bytes / self.bw_bytes_per_s


def nearest_row(table: list[GemmResult], m: int, n: int, k: int) -> int:
    """Index of the table's shape nearest to [m, n, k] in log space (the one the estimate is scaled from)."""
    return min(
        range(len(table)),
        key=lambda i: math.log(table[i].m / m) ** 2 + math.log(table[i].n / n) ** 2 + math.log(table[i].k / k) ** 2,
    )


def load_gemm_table(path: Path) -> list[GemmResult]:
    """A `gemm.csv` written by a characterize run (or by benchmarks/bench_gemm.py)."""
    path = Path(path)
    if not path.is_file():
        raise CollbenchError(f"no GEMM table at {path}; run services/characterize (or bench_gemm.py) first")
    with path.open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    ints, floats = ("m", "n", "k"), ("time_us", "tflops", "intensity_flops_per_byte", "predicted_efficiency")
    try:
        return [GemmResult(**{**r, **{c: int(r[c]) for c in ints}, **{c: float(r[c]) for c in floats}}) for r in rows]
    except (KeyError, TypeError, ValueError) as err:
        raise CollbenchError(f"{path} is not a collbench GEMM table: {err}") from None
