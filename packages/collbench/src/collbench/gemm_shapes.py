"""The GEMM table's rows and the shapes a sweep times: `GemmShape`, `GemmResult` (a `gemm.csv` row) and the
tile-and-wave quantization model.

Torch-free, so the sizing study, plots and roofline read GEMM tables without importing torch; `collbench.gemm`
times the shapes.
"""

import math
from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class GemmShape:
    """One C[M,N] = A[M,K] @ B[K,N]; `family` groups shapes in tables and plots."""

    m: int
    n: int
    k: int
    family: str = "square"
    label: str = ""

    @property
    def flops(self) -> int:
        """Multiply-adds counted as two FLOPs."""
        return 2 * self.m * self.n * self.k

    def bytes_moved(self, element_bytes: int = 2) -> int:
        """Compulsory traffic: read A and B, write C once."""
        return element_bytes * (self.m * self.k + self.k * self.n + self.m * self.n)


@dataclass
class GemmResult:
    """A timed shape."""

    m: int
    n: int
    k: int
    family: str
    label: str
    dtype: str
    time_us: float
    tflops: float
    intensity_flops_per_byte: float
    predicted_efficiency: float
    device: str
    time_us_min: float = math.nan  # fastest and slowest timed batch, per call
    time_us_max: float = math.nan
    calls_per_batch: int = 0
    batches: int = 0
    operand_sets: int = 1  # A/B/C sets rotated through (L2 defeat)

    def __post_init__(self) -> None:
        # rows read back from gemm.csv arrive as strings; older tables lack the timing columns
        for name in ("time_us_min", "time_us_max"):
            setattr(self, name, float(getattr(self, name)))
        for name in ("calls_per_batch", "batches", "operand_sets"):
            setattr(self, name, int(getattr(self, name)))

    def as_row(self) -> dict[str, object]:
        """Plain dict for CSV/JSON."""
        return asdict(self)


def quantization_efficiency(
    m: int, n: int, k: int, units: int, tile_m: int = 128, tile_n: int = 128, tile_k: int = 64
) -> float:
    """Useful fraction of the tile-and-wave work a GEMM pays for on `units` SMs/CUs (1.0 = no loss)."""
    tiles = math.ceil(m / tile_m) * math.ceil(n / tile_n)
    waves = math.ceil(tiles / units)
    paid = waves * units * tile_m * tile_n * (math.ceil(k / tile_k) * tile_k)
    return (m * n * k) / paid


def square_shapes(sizes: list[int]) -> list[GemmShape]:
    """M = N = K grid."""
    return [GemmShape(s, s, s, "square", f"{s}^3") for s in sizes]


def quantization_shapes(m: int, k: int, n_min: int, n_max: int, n_step: int) -> list[GemmShape]:
    """Fixed M, K; N stepping through tile multiples and across wave boundaries."""
    return [GemmShape(m, n, k, "n_sweep", f"N={n}") for n in range(n_min, n_max + 1, n_step)]


def transformer_shapes(
    hidden_size: int,
    q_size: int,
    kv_size: int,
    moe_intermediate_size: int,
    tokens: int,
    tokens_per_expert: int,
    vocab_size: int = 0,
) -> list[GemmShape]:
    """The block's GEMMs (forward, tokens as M): fused QKV and output projections, one expert's gated
    up-projection and down-projection at `tokens_per_expert` rows, and the LM head when a vocab is given."""
    d, f = hidden_size, moe_intermediate_size
    shapes = [
        GemmShape(tokens, q_size + 2 * kv_size, d, "attention", "qkv_proj"),
        GemmShape(tokens, d, q_size, "attention", "o_proj"),
        GemmShape(tokens_per_expert, 2 * f, d, "expert", "expert_gate_up"),
        GemmShape(tokens_per_expert, d, f, "expert", "expert_down"),
    ]
    if vocab_size:
        shapes.append(GemmShape(tokens, vocab_size, d, "lm_head", "lm_head"))
    return shapes
