"""Memory bandwidth: copy, read, write and triad over buffer sizes from cache-resident to many GB.

Bytes counted per call (STREAM's convention, no write-allocate): copy b = a reads and writes N
(2N); read sum(a) reads N; write a.fill_(x) writes N; triad a = b + s c reads 2N and writes N (3N).
The reference for "how fast can this device move memory" is the best `Tensor.copy_` bandwidth in the
same run. Imports only torch, so `benchmarks/bench_membw.py` runs where Hydra is absent.
"""

from collections.abc import Callable
from dataclasses import asdict, dataclass

import torch

from collbench.timing import time_graph_per_call_us, time_per_call_us

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

    def as_row(self) -> dict[str, object]:
        """Plain dict for CSV/JSON."""
        return asdict(self)


def _kernel(name: str, numel: int, dtype: torch.dtype, device: torch.device) -> Callable[[], object]:
    a = torch.ones(numel, dtype=dtype, device=device)
    if name == "read":
        out = torch.empty(1, dtype=dtype, device=device)
        return lambda: torch.sum(a, dim=0, keepdim=True, out=out)
    if name == "write":
        return lambda: a.fill_(2.0)
    b = torch.ones(numel, dtype=dtype, device=device)
    if name == "copy":
        return lambda: b.copy_(a)
    c = torch.ones(numel, dtype=dtype, device=device)
    return lambda: torch.add(b, c, alpha=3.0, out=a)  # triad


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
) -> list[MembwResult]:
    """Time each kernel at each buffer size; GB/s = bytes moved / time (1e9 B/s)."""
    torch_dtype = getattr(torch, dtype)
    elem = torch.empty((), dtype=torch_dtype).element_size()
    results = []
    grid = [(k, s) for k in kernels for s in sizes]
    iterator = grid
    if progress:
        from tqdm import tqdm

        iterator = tqdm(grid, desc="membw", unit="pt", leave=False)
    for kernel, size in iterator:
        numel = max(1, size // elem)
        fn = _kernel(kernel, numel, torch_dtype, device)
        # small buffers: more calls per timed span so the clock resolution and launch gaps average out;
        # on a GPU they run from one CUDA graph, so the launch gaps vanish and the cache bandwidth shows
        calls = iters * max(1, min(64, (1 << 24) // max(size, 1)))
        if device.type == "cuda" and size < graph_below_bytes:
            t_us = time_graph_per_call_us(fn, calls, warmup, device)
        else:
            t_us = time_per_call_us(fn, calls, warmup, device)
        moved = BYTES_PER_ELEMENT_MOVED[kernel] * numel * elem
        results.append(MembwResult(kernel, numel * elem, moved, t_us, moved / (t_us * 1e-6) / 1e9, device_label))
        del fn
    return results


def best_bw(results: list[MembwResult], kernel: str) -> float:
    """Highest bandwidth one kernel reached over the sizes (0 if it was not run)."""
    return max((r.bw_gbps for r in results if r.kernel == kernel), default=0.0)


def large_buffer_bw(results: list[MembwResult], kernel: str, min_bytes: int) -> float:
    """Best bandwidth over buffers >= `min_bytes` (past the caches: the HBM/DRAM ceiling)."""
    return max((r.bw_gbps for r in results if r.kernel == kernel and r.size_bytes >= min_bytes), default=0.0)
