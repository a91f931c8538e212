"""bf16 GEMM sweep: TFLOP/s over square grids, the transformer's own shapes, and an N sweep that makes
tile and wave quantization visible.

A GEMM C[M,N] = A[M,K] B[K,N] runs as ceil(M/tm) x ceil(N/tn) output tiles spread over the SMs/CUs in
waves; a shape one column past a tile (or one tile past a full wave) pays for a whole extra tile (or
wave). `quantization_efficiency` is that model: useful work / work paid for. The sweep prints it beside
the measurement so the steps in the measured curve can be read against it.

Imports only torch and the standard library, so `benchmarks/bench_gemm.py` runs where Hydra is absent.
"""

import math
from dataclasses import asdict, dataclass

import torch

from collbench.timing import time_per_call_us


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


def time_gemm(
    shape: GemmShape,
    dtype: torch.dtype,
    device: torch.device,
    iters: int,
    warmup: int,
    generator: torch.Generator | None = None,
) -> float:
    """Microseconds per `torch.matmul(A, B, out=C)` of `shape`."""
    a = torch.randn(shape.m, shape.k, device=device, dtype=torch.float32, generator=generator).to(dtype)
    b = torch.randn(shape.k, shape.n, device=device, dtype=torch.float32, generator=generator).to(dtype)
    c = torch.empty(shape.m, shape.n, device=device, dtype=dtype)
    return time_per_call_us(lambda: torch.matmul(a, b, out=c), iters, warmup, device)


def run_gemm_sweep(
    shapes: list[GemmShape],
    dtype: str,
    device: torch.device,
    iters: int,
    warmup: int,
    units: int,
    device_label: str = "",
    progress: bool = False,
) -> list[GemmResult]:
    """Time every shape; TFLOP/s and the quantization model's efficiency beside each."""
    torch_dtype = getattr(torch, dtype)
    elem = torch.empty((), dtype=torch_dtype).element_size()
    gen = torch.Generator(device=device).manual_seed(0)
    results = []
    iterator = shapes
    if progress:
        from tqdm import tqdm

        iterator = tqdm(shapes, desc="gemm", unit="shape", leave=False)
    for shape in iterator:
        t_us = time_gemm(shape, torch_dtype, device, iters, warmup, gen)
        results.append(
            GemmResult(
                m=shape.m,
                n=shape.n,
                k=shape.k,
                family=shape.family,
                label=shape.label,
                dtype=dtype,
                time_us=t_us,
                tflops=shape.flops / (t_us * 1e-6) / 1e12,
                intensity_flops_per_byte=shape.flops / shape.bytes_moved(elem),
                predicted_efficiency=quantization_efficiency(shape.m, shape.n, shape.k, units),
                device=device_label,
            )
        )
    return results


def reference_matmul_tflops(size: int, dtype: str, device: torch.device, iters: int, warmup: int) -> float:
    """Plain `torch.matmul(a, b)` at size^3 (allocating its output), the yardstick for the sweep's peak."""
    torch_dtype = getattr(torch, dtype)
    a = torch.randn(size, size, device=device).to(torch_dtype)
    b = torch.randn(size, size, device=device).to(torch_dtype)
    t_us = time_per_call_us(lambda: torch.matmul(a, b), iters, warmup, device)
    return 2 * size**3 / (t_us * 1e-6) / 1e12
