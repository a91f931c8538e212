"""Memory bandwidth: copy, read, write and triad over buffer sizes from cache-resident to many GB.

Bytes counted per call (STREAM's convention, no write-allocate): copy b = a reads and writes N
(2N); read sum(a) reads N; write a.fill_(x) writes N; triad a = b + s c reads 2N and writes N (3N).
The reference for "how fast can this device move memory" is the best `Tensor.copy_` bandwidth in the
same run. Buffers hold random data. Each point is timed by `collbench.timing.measure_us` (median of
several batches, each at least the policy's `batch_s`); buffers below `graph_below_bytes` run as CUDA
graphs of many calls, so the cache-resident sizes are not launch-bound. Buffers smaller than the L2 are
meant to measure the cache; the HBM/DRAM figures come from buffers several times the L2
(`large_buffer_bw`). Imports only torch, so `benchmarks/bench_device.py` runs where Hydra is absent.
"""

import math
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace

import torch

from collbench.timing import Timing, TimingPolicy, capture_graph, measure_us

BYTES_PER_ELEMENT_MOVED = {"copy": 2, "read": 1, "write": 1, "triad": 3}


@dataclass
class MembwResult:
    """One kernel at one buffer size."""

    kernel: str
    size_bytes: int  # one buffer
    bytes_moved: int  # per call
    time_us: float
    bw_gbps: float
    device: str
    time_us_min: float = math.nan  # fastest and slowest timed batch, per call
    time_us_max: float = math.nan
    calls_per_batch: int = 0
    batches: int = 0
    graph_calls: int = 0  # calls per CUDA graph (0: launched one by one)

    def as_row(self) -> dict[str, object]:
        """Plain dict for CSV/JSON."""
        return asdict(self)


def _kernel(
    name: str, numel: int, dtype: torch.dtype, device: torch.device, generator: torch.Generator | None = None
) -> Callable[[], object]:
    def buffer() -> torch.Tensor:
        return torch.rand(numel, dtype=dtype, device=device, generator=generator)

    a = buffer()
    if name == "read":
        out = torch.empty(1, dtype=dtype, device=device)
        return lambda: torch.sum(a, dim=0, keepdim=True, out=out)
    if name == "write":
        return lambda: a.fill_(2.0)
    b = buffer()
    if name == "copy":
        return lambda: b.copy_(a)
    c = buffer()
    return lambda: torch.add(b, c, alpha=3.0, out=a)  # triad


def graph_calls_for(size_bytes: int) -> int:
    """Calls captured per CUDA graph: many for tiny buffers (a replay of 512 x 1 us calls), few near 256 MiB."""
    return max(8, min(512, (256 << 20) // max(size_bytes, 1)))


def time_kernel(
    fn: Callable[[], object], size_bytes: int, device: torch.device, policy: TimingPolicy, graph_below_bytes: int
) -> tuple[Timing, int]:
    """Time one kernel closure, as a CUDA graph replay below `graph_below_bytes` on a GPU; returns the timing
    and the calls per graph (0 when launched one by one).

    With a duration-based policy the graph holds `graph_calls_for(size)` calls and is replayed until a batch
    lasts `batch_s`; with a count-based one it holds `min_calls` calls and each batch is one replay (at least 3 batches).
    """
    if device.type == "cuda" and size_bytes < graph_below_bytes:
        for _ in range(max(1, policy.warmup_calls)):
            fn()
        if policy.batch_s > 0:
            calls, replay_policy = graph_calls_for(size_bytes), policy
        else:
            calls = policy.min_calls
            replay_policy = replace(policy, min_calls=1, warmup_calls=0, batches=max(3, policy.batches))
        replay = capture_graph(fn, calls, device)
        return measure_us(replay, device, replay_policy, calls_per_fn=calls), calls
    return measure_us(fn, device, policy), 0


def run_membw_sweep(
    kernels: list[str],
    sizes: list[int],
    device: torch.device,
    iters: int,
    warmup: int,
    dtype: str = "float32",
    device_label: str = "",
    progress: bool = False,
    graph_below_bytes: int = 256 << 20,
    policy: TimingPolicy | None = None,
) -> list[MembwResult]:
    """Time each kernel at each buffer size; GB/s = bytes moved / time (1e9 B/s).

    Without a `policy`, each point is one span of `iters` calls (x up to 64 for small buffers) after
    `warmup` calls.
    """
    torch_dtype = getattr(torch, dtype)
    gen = torch.Generator(device=device).manual_seed(0)
    elem = torch.empty((), dtype=torch_dtype).element_size()
    results = []
    grid = [(k, s) for k in kernels for s in sizes]
    iterator = grid
    if progress:
        from tqdm import tqdm

        iterator = tqdm(grid, desc="membw", unit="pt", leave=False)
    for kernel, size in iterator:
        numel = max(1, size // elem)
        fn = _kernel(kernel, numel, torch_dtype, device, gen)
        # the CPU's default policy: more calls for small buffers, so the clock resolution averages out
        point_policy = policy or TimingPolicy.from_iters(iters * max(1, min(64, (1 << 24) // max(size, 1))), warmup)
        timing, graph_calls = time_kernel(fn, numel * elem, device, point_policy, graph_below_bytes)
        t_us = timing.median_us
        moved = BYTES_PER_ELEMENT_MOVED[kernel] * numel * elem
        results.append(
            MembwResult(
                kernel,
                numel * elem,
                moved,
                t_us,
                moved / (t_us * 1e-6) / 1e9,
                device_label,
                time_us_min=timing.min_us,
                time_us_max=timing.max_us,
                calls_per_batch=timing.calls_per_batch,
                batches=timing.batches,
                graph_calls=graph_calls,
            )
        )
        del fn
    return results


def best_bw(results: list[MembwResult], kernel: str) -> float:
    """Highest bandwidth one kernel reached over the sizes (0 if it was not run)."""
    return max((r.bw_gbps for r in results if r.kernel == kernel), default=0.0)


def large_buffer_bw(results: list[MembwResult], kernel: str, min_bytes: int) -> float:
    """Best bandwidth over buffers >= `min_bytes` (past the caches: the HBM/DRAM ceiling)."""
    return max((r.bw_gbps for r in results if r.kernel == kernel and r.size_bytes >= min_bytes), default=0.0)
