"""Per-call timing: CUDA events on a GPU, perf_counter (after a barrier, when distributed) on a CPU.

A loop of `iters` calls is timed as one span and divided, as nccl-tests does, so the event or clock
overhead is paid once per measurement, not once per call.
"""

import time
from collections.abc import Callable

import torch


def time_per_call_us(
    fn: Callable[[], object], iters: int, warmup: int, device: torch.device, barrier: Callable[[], object] | None = None
) -> float:
    """Mean microseconds per call of `fn` on `device`."""
    for _ in range(warmup):
        fn()
    if device.type == "cuda":
        torch.cuda.synchronize(device)
        if barrier is not None:
            barrier()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(iters):
            fn()
        end.record()
        end.synchronize()
        return start.elapsed_time(end) * 1e3 / iters
    if barrier is not None:
        barrier()
    t0 = time.perf_counter()
    for _ in range(iters):
        fn()
    return (time.perf_counter() - t0) * 1e6 / iters


def time_graph_per_call_us(
    fn: Callable[[], object], calls: int, warmup: int, device: torch.device, replays: int = 3
) -> float:
    """Mean microseconds per call with `calls` calls captured in one CUDA graph (launch gaps removed),
    best of `replays` timed replays; small, cache-resident kernels need this to show their bandwidth."""
    for _ in range(max(1, warmup)):
        fn()
    torch.cuda.synchronize(device)
    graph = torch.cuda.CUDAGraph()
    stream = torch.cuda.Stream(device)
    stream.wait_stream(torch.cuda.current_stream(device))
    with torch.cuda.stream(stream):
        fn()
    torch.cuda.current_stream(device).wait_stream(stream)
    with torch.cuda.graph(graph):
        for _ in range(calls):
            fn()
    graph.replay()
    torch.cuda.synchronize(device)
    best = float("inf")
    for _ in range(replays):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        graph.replay()
        end.record()
        end.synchronize()
        best = min(best, start.elapsed_time(end) * 1e3 / calls)
    return best


def pick_device(name: str = "auto") -> torch.device:
    """`cuda` when asked for (or `auto` and present), else `cpu`."""
    if name == "cuda" or (name == "auto" and torch.cuda.is_available()):
        return torch.device("cuda", torch.cuda.current_device() if torch.cuda.is_available() else 0)
    return torch.device("cpu")


def device_name(device: torch.device) -> str:
    """Human name of the device for result metadata."""
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    import platform

    return platform.processor() or platform.machine()
