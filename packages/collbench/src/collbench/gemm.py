"""bf16 GEMM sweep: TFLOP/s over square grids, the transformer's own shapes, and an N sweep that makes
tile and wave quantization visible.

A GEMM C[M,N] = A[M,K] B[K,N] runs as ceil(M/tm) x ceil(N/tn) output tiles spread over the SMs/CUs in
waves; a shape one column past a tile (or one tile past a full wave) pays for a whole extra tile (or
wave). `quantization_efficiency` is that model: useful work / work paid for. The sweep prints it beside
the measurement so the steps in the measured curve can be read against it.

Timing (`collbench.timing.measure_us`): random operands (zeros run faster on tensor cores), several
operand sets rotated call to call until they span `rotate_bytes` (twice the L2 in the GPU benchmark) so a
small GEMM reads its inputs from memory rather than from the L2 that held them a call earlier, and the
median of several timed batches. `sustain_matmul` runs before a sweep so the clock has ramped up.

Imports only torch and the standard library, so `benchmarks/bench_device.py` runs where Hydra is absent.
"""

import itertools
import math
import time

import torch

from collbench.gemm_shapes import (
    GemmResult,
    GemmShape,
    quantization_efficiency,
    quantization_shapes,
    square_shapes,
    transformer_shapes,
)
from collbench.timing import Timing, TimingPolicy, measure_us, sync

MAX_OPERAND_SETS = 1024
__all__ = [
    "GemmResult",
    "GemmShape",
    "quantization_efficiency",
    "quantization_shapes",
    "run_gemm_sweep",
    "square_shapes",
    "transformer_shapes",
]


def operand_sets(shape: GemmShape, element_bytes: int, rotate_bytes: int) -> int:
    """How many A/B/C sets to rotate through so that together they span `rotate_bytes` (1 when one set does)."""
    if rotate_bytes <= 0:
        return 1
    return max(1, min(MAX_OPERAND_SETS, math.ceil(rotate_bytes / shape.bytes_moved(element_bytes))))


def make_operands(
    shape: GemmShape,
    dtype: torch.dtype,
    device: torch.device,
    sets: int = 1,
    generator: torch.Generator | None = None,
    with_output: bool = True,
) -> list[tuple[torch.Tensor, ...]]:
    """`sets` independent (A, B[, C]) triples of standard-normal operands (C left uninitialized)."""
    out = []
    for _ in range(sets):
        a = torch.randn(shape.m, shape.k, device=device, dtype=torch.float32, generator=generator).to(dtype)
        b = torch.randn(shape.k, shape.n, device=device, dtype=torch.float32, generator=generator).to(dtype)
        out.append((a, b, torch.empty(shape.m, shape.n, device=device, dtype=dtype)) if with_output else (a, b))
    return out


def time_gemm_shape(
    shape: GemmShape,
    dtype: torch.dtype,
    device: torch.device,
    policy: TimingPolicy,
    rotate_bytes: int = 0,
    generator: torch.Generator | None = None,
    allocate_output: bool = False,
) -> tuple[Timing, int]:
    """Time `torch.matmul(A, B, out=C)` (or plain `torch.matmul(A, B)` with `allocate_output`) of `shape`,
    rotating through operand sets; returns the timing and the number of sets."""
    elem = torch.empty((), dtype=dtype).element_size()
    sets = operand_sets(shape, elem, rotate_bytes)
    operands = make_operands(shape, dtype, device, sets, generator, with_output=not allocate_output)
    cycle = itertools.cycle(operands)
    if allocate_output:

        def call() -> object:
            return torch.matmul(*next(cycle))
    else:

        def call() -> object:
            a, b, c = next(cycle)
            return torch.matmul(a, b, out=c)

    return measure_us(call, device, policy), sets


def time_gemm(
    shape: GemmShape,
    dtype: torch.dtype,
    device: torch.device,
    iters: int,
    warmup: int,
    generator: torch.Generator | None = None,
) -> float:
    """Median microseconds per `torch.matmul(A, B, out=C)` of `shape` (`iters` calls a batch)."""
    return time_gemm_shape(shape, dtype, device, TimingPolicy.from_iters(iters, warmup), 0, generator)[0].median_us


def run_gemm_sweep(
    shapes: list[GemmShape],
    dtype: str,
    device: torch.device,
    iters: int,
    warmup: int,
    units: int,
    device_label: str = "",
    progress: bool = False,
    policy: TimingPolicy | None = None,
    rotate_bytes: int = 0,
) -> list[GemmResult]:
    """Time every shape; TFLOP/s and the quantization model's efficiency beside each.

    `policy` (default: one span of `iters` calls after `warmup` calls) and `rotate_bytes`
    (operand sets rotated until they span this many bytes; 0 = one set) set how each shape is timed.
    """
    torch_dtype = getattr(torch, dtype)
    elem = torch.empty((), dtype=torch_dtype).element_size()
    policy = policy or TimingPolicy.from_iters(iters, warmup)
    gen = torch.Generator(device=device).manual_seed(0)
    results = []
    iterator = shapes
    if progress:
        from tqdm import tqdm

        iterator = tqdm(shapes, desc="gemm", unit="shape", leave=False)
    for shape in iterator:
        timing, sets = time_gemm_shape(shape, torch_dtype, device, policy, rotate_bytes, gen)
        t_us = timing.median_us
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
                time_us_min=timing.min_us,
                time_us_max=timing.max_us,
                calls_per_batch=timing.calls_per_batch,
                batches=timing.batches,
                operand_sets=sets,
            )
        )
    return results


def reference_matmul_tflops(
    size: int,
    dtype: str,
    device: torch.device,
    iters: int,
    warmup: int,
    policy: TimingPolicy | None = None,
    rotate_bytes: int = 0,
) -> float:
    """Plain `torch.matmul(a, b)` at size^3 (allocating its output), the yardstick for the sweep's peak,
    timed exactly as the sweep times its shapes (same policy, same operand rotation)."""
    shape = GemmShape(size, size, size)
    policy = policy or TimingPolicy.from_iters(iters, warmup)
    gen = torch.Generator(device=device).manual_seed(1)
    timing, _ = time_gemm_shape(shape, getattr(torch, dtype), device, policy, rotate_bytes, gen, allocate_output=True)
    return shape.flops / (timing.median_us * 1e-6) / 1e12


def sustain_matmul(device: torch.device, seconds: float, size: int = 8192, dtype: str = "bfloat16") -> dict[str, float]:
    """Run back-to-back size^3 matmuls on random data for `seconds` of wall time, so the GPU's clock has
    ramped up (from 345 MHz idle on an H200) before anything is timed; returns what it ran and its last rate."""
    torch_dtype = getattr(torch, dtype)
    a, b, c = make_operands(GemmShape(size, size, size), torch_dtype, device)[0]
    calls, chunk, last = 0, 1, 0.0
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < seconds or calls == 0:
        t1 = time.perf_counter()
        for _ in range(chunk):
            torch.matmul(a, b, out=c)
        sync(device)
        took = time.perf_counter() - t1
        calls += chunk
        last = 2 * size**3 * chunk / took / 1e12
        chunk = max(1, min(64, int(chunk * 0.05 / max(took, 1e-6)) or 1))  # ~50 ms between host checks
    return {"seconds": round(time.perf_counter() - t0, 3), "calls": calls, "size": size, "last_tflops": last}
