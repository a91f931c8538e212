"""Algorithm and bus bandwidth with the nccl-tests correction factors.

algbw = S / t. busbw = algbw * factor(n), the factor that makes a collective's number comparable with
the link's peak independently of the rank count (nccl-tests `doc/PERFORMANCE.md`). S is nccl-tests'
`size`: the larger of the per-rank send and receive buffers (all-gather: the gathered output,
reduce-scatter: the full input, all-to-all: the whole per-rank buffer). GB = 1e9 bytes.
"""

from collections.abc import Callable

from collbench.errors import CollbenchError

BUS_FACTORS: dict[str, Callable[[int], float]] = {
    "all_reduce": lambda n: 2.0 * (n - 1) / n,
    "reduce_scatter": lambda n: (n - 1) / n,
    "all_gather": lambda n: (n - 1) / n,
    "all_to_all": lambda n: (n - 1) / n,
    "broadcast": lambda n: 1.0,
    "reduce": lambda n: 1.0,
    "sendrecv": lambda n: 1.0,
    "gather": lambda n: (n - 1) / n,
    "scatter": lambda n: (n - 1) / n,
}


def bus_factor(collective: str, n_ranks: int) -> float:
    """The nccl-tests busbw/algbw ratio of `collective` on `n_ranks` ranks."""
    if collective not in BUS_FACTORS:
        raise CollbenchError(f"unknown collective {collective!r}; allowed: one of {', '.join(BUS_FACTORS)}")
    if n_ranks < 1:
        raise CollbenchError(f"n_ranks = {n_ranks}; allowed: an integer >= 1")
    return BUS_FACTORS[collective](n_ranks)


def algbw_gbps(size_bytes: int, time_us: float) -> float:
    """Bytes moved per second as the user sees it, in GB/s (1e9 B/s)."""
    if time_us <= 0:
        return 0.0
    return size_bytes / (time_us * 1e-6) / 1e9


def busbw_gbps(collective: str, size_bytes: int, time_us: float, n_ranks: int) -> float:
    """Bus bandwidth in GB/s, comparable with the hardware link peak."""
    return algbw_gbps(size_bytes, time_us) * bus_factor(collective, n_ranks)
