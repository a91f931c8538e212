"""Device timing: CUDA events on a GPU, perf_counter (after a barrier, when distributed) on a CPU.

Two ways to time a call:

- `time_per_call_us`: one span of `iters` calls, divided, as nccl-tests does (the collectives use it; the
  barrier lines the ranks up first).
- `measure_us` with a `TimingPolicy`: the kernel sweeps use it. A GPU's clock idles low (an H200's SM
  clock reads 345 MHz at rest) and ramps up under load, so a few milliseconds of work undercount; the
  policy warms the kernel up for a set time, sizes each timed batch to a minimum duration from a probe,
  and returns the median (and the spread) of several batches timed with events.
"""

import math
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass

import torch

MAX_CALLS_PER_BATCH = 1 << 20


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
    elif barrier is not None:
        barrier()
    return span_s(fn, iters, device) * 1e6 / iters


def span_s(fn: Callable[[], object], calls: int, device: torch.device) -> float:
    """Seconds that `calls` back-to-back calls of `fn` take on `device` (CUDA events around them on a GPU)."""
    if device.type == "cuda":
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(calls):
            fn()
        end.record()
        end.synchronize()
        return start.elapsed_time(end) / 1e3
    t0 = time.perf_counter()
    for _ in range(calls):
        fn()
    return time.perf_counter() - t0


@dataclass(frozen=True)
class TimingPolicy:
    """How long and how often one sweep point is timed.

    `min_calls` calls per batch at least, more until a batch lasts `batch_s`; `batches` timed batches, the
    median reported; first `warmup_calls` calls and then `warmup_s` seconds of calls untimed (the clock
    ramps up and the caches, cuBLAS heuristics and allocator settle). `batch_s = 0` gives exactly
    `min_calls` calls per batch (the cheap CPU setting).
    """

    min_calls: int = 5
    batches: int = 3
    batch_s: float = 0.0
    warmup_calls: int = 2
    warmup_s: float = 0.0

    @classmethod
    def from_iters(cls, iters: int, warmup: int) -> "TimingPolicy":
        """The `iters`/`warmup` knobs of the Hydra configs: one span of `iters` calls after `warmup` calls."""
        return cls(min_calls=max(1, iters), batches=1, warmup_calls=max(0, warmup))

    @classmethod
    def gpu(cls, batch_ms: float = 20.0, batches: int = 5, warmup_ms: float = 25.0) -> "TimingPolicy":
        """The GPU sweep's setting: >= batches x batch_ms of timed work per point (100 ms by default)."""
        return cls(min_calls=3, batches=batches, batch_s=batch_ms / 1e3, warmup_calls=2, warmup_s=warmup_ms / 1e3)


@dataclass(frozen=True)
class Timing:
    """Microseconds per call: median over the batches, and the fastest and slowest batch."""

    median_us: float
    min_us: float
    max_us: float
    calls_per_batch: int
    batches: int

    @property
    def spread(self) -> float:
        """(slowest - fastest) / median: how far the batches disagree."""
        return (self.max_us - self.min_us) / self.median_us if self.median_us > 0 else 0.0


def measure_us(fn: Callable[[], object], device: torch.device, policy: TimingPolicy, calls_per_fn: int = 1) -> Timing:
    """Time `fn` under `policy`; `calls_per_fn` > 1 when one `fn` runs several calls (a CUDA graph replay)."""
    for _ in range(policy.warmup_calls):
        fn()
    sync(device)
    reps = policy.min_calls
    if policy.batch_s > 0 or policy.warmup_s > 0:
        per_fn_s = probe_s(fn, device, target_s=min(max(policy.batch_s, policy.warmup_s), 2e-3))
        if policy.warmup_s > 0:
            span_s(fn, max(1, math.ceil(policy.warmup_s / per_fn_s)), device)
        reps = max(reps, min(MAX_CALLS_PER_BATCH, math.ceil(policy.batch_s / per_fn_s)))
    per_call = [span_s(fn, reps, device) * 1e6 / (reps * calls_per_fn) for _ in range(max(1, policy.batches))]
    return Timing(statistics.median(per_call), min(per_call), max(per_call), reps * calls_per_fn, len(per_call))


def probe_s(fn: Callable[[], object], device: torch.device, target_s: float) -> float:
    """Seconds per call from spans of 1, 4, 16 ... calls, stopping at the first that lasts `target_s`."""
    calls = 1
    while True:
        took = span_s(fn, calls, device)
        if took >= target_s or calls >= MAX_CALLS_PER_BATCH:
            return max(took / calls, 1e-9)
        calls *= 4


def capture_graph(fn: Callable[[], object], calls: int, device: torch.device) -> Callable[[], object]:
    """`calls` calls of `fn` captured in one CUDA graph; returns its replay (launch gaps removed, so small,
    cache-resident kernels show their bandwidth). `fn` runs once on a side stream first, as capture needs."""
    sync(device)
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
    sync(device)
    return graph.replay


def sync(device: torch.device) -> None:
    """Wait for the device's queued work (a no-op on a CPU)."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)


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


def gpu_state(device: torch.device) -> dict[str, int]:
    """SM clock (MHz), power (mW) and temperature (C) through NVML, for the results' notes; {} where unreadable."""
    if device.type != "cuda":
        return {}
    state = {}
    for key, read in (
        ("sm_clock_mhz", torch.cuda.clock_rate),
        ("power_mw", torch.cuda.power_draw),
        ("temperature_c", torch.cuda.temperature),
    ):
        try:
            state[key] = int(read(device))
        except Exception:  # NVML (pynvml) missing or refused: the numbers are optional notes
            continue
    return state
