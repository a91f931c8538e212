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
