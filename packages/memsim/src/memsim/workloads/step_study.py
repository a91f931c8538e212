"""Simulate one LLM step on one memory standard and report it against its bandwidth roofline.

The step's stream (`llm_step`) is sampled (`sampling`), driven as fast as the memory accepts it
(`saturating_driver`), and the sample's time and energy are scaled to the whole step. The roofline is
the caller's byte accounting (e.g. zaya-model's `decode_bytes_per_token`) over the standard's peak
bandwidth, channels x request size / (burst cycles x tCK); the simulated time is the same step at the
bandwidth the controller achieved, refresh, row misses and bank conflicts included.

A sample is short, so its first and last requests (queues filling, the last reads returning) weigh more
than in the whole step. The bandwidth is therefore measured in steady state, over the middle
`STEADY_FRACTION` of the column commands, and the step's time is the sample's fill-and-drain overhead once
plus the stream's bytes at that bandwidth.
"""

from collections.abc import Callable
from typing import Any

import numpy as np

from memsim.commands import COLUMN_CMDS
from memsim.memory_system import MemorySystem
from memsim.spec import DramSpec
from memsim.workloads.llm_step import LlmStepShape, build_step_stream
from memsim.workloads.sampling import sample_stream
from memsim.workloads.saturating_driver import run_saturating


def peak_bandwidth_gbps(spec: DramSpec) -> float:
    """Data-bus peak of the whole memory system in GB/s (1e9 B/s): every channel bursting back to back."""
    return spec.channels * spec.request_size_bytes / (spec.burst_cycle * spec.tCK_ns)


STEADY_FRACTION = 0.8
_MIN_STEADY_COMMANDS = 64


def steady_state_lines_per_cycle(system: MemorySystem) -> float:
    """Lines moved per cycle over the middle STEADY_FRACTION of the column commands (0.0 if none issued)."""
    column = COLUMN_CMDS
    cycles = np.array(sorted(c[0] for c in system.issued_commands() if c[2] in column), dtype=np.int64)
    n = len(cycles)
    if n < 2:
        return 0.0
    if n < _MIN_STEADY_COMMANDS:
        lo, hi = 0, n - 1
    else:
        cut = int(n * (1 - STEADY_FRACTION) / 2)
        lo, hi = cut, n - 1 - cut
    span = int(cycles[hi] - cycles[lo])
    return (hi - lo) / span if span > 0 else float(n)


def fold_addresses(addrs: np.ndarray, spec: DramSpec) -> np.ndarray:
    """Fold a virtual layout larger than the memory into it (the capacity is a power of two: low bits kept)."""
    return addrs % spec.capacity_bytes


def _latency_summary(latencies: np.ndarray, tck_ns: float) -> dict[str, float]:
    if not len(latencies):
        return {"read_latency_mean_ns": 0.0, "read_latency_p50_ns": 0.0, "read_latency_p99_ns": 0.0,
                "read_latency_max_ns": 0.0}  # fmt: skip
    p50, p99 = np.percentile(latencies, [50, 99])
    return {"read_latency_mean_ns": float(latencies.mean() * tck_ns), "read_latency_p50_ns": float(p50 * tck_ns),
            "read_latency_p99_ns": float(p99 * tck_ns), "read_latency_max_ns": float(latencies.max() * tck_ns)}  # fmt: skip


def simulate_step(spec: DramSpec, shape: LlmStepShape, accounting_bytes: float, *, sample_bytes: int,
                  window_bytes: int, include_writes: bool = True, seed: int = 0,
                  progress: Callable[[int, int], None] | None = None) -> dict[str, Any]:  # fmt: skip
    """Metrics of one step (JSON-ready) plus `read_latencies_ns`, the sample's latencies, for plots."""
    stream = build_step_stream(shape, spec.request_size_bytes, seed=seed)
    if not include_writes:
        keep = ~stream.is_write
        stream = type(stream)(stream.line_bytes, stream.start_line[keep], stream.n_lines[keep],
                              stream.is_write[keep], stream.region[keep])  # fmt: skip
    sample = sample_stream(stream, sample_bytes, window_bytes, seed=seed)
    system = MemorySystem(spec, functional=False)
    report = None if progress is None else (lambda done: progress(done, len(sample)))
    result = run_saturating(system, fold_addresses(sample.addrs, spec), sample.is_write, progress=report)
    stats = system.stats(system.clk)
    tck = spec.tCK_ns
    sampled_bytes = len(sample) * spec.request_size_bytes
    sim_ns = result.cycles * tck
    # DRAMSim3 keeps energy as mW x cycles; x tCK gives pJ. Command energy scales with the bytes moved,
    # background and refresh with time.
    energy_pj = sum(ch["total_energy"] for ch in stats.values()) * tck
    command_pj = sum(ch[k] for ch in stats.values() for k in ("act_energy", "read_energy", "write_energy")) * tck
    read_cmds = sum(ch["num_read_cmds"] for ch in stats.values())
    row_hits = sum(ch["num_read_row_hits"] for ch in stats.values())
    peak = peak_bandwidth_gbps(spec)
    sample_bw = sampled_bytes / sim_ns
    steady = steady_state_lines_per_cycle(system) * spec.request_size_bytes / tck
    achieved = min(peak, steady) if steady > 0 else sample_bw
    overhead_ns = max(0.0, sim_ns - sampled_bytes / achieved)
    step_ns = overhead_ns + stream.total_bytes / achieved
    roofline_ns = accounting_bytes / peak
    metrics: dict[str, Any] = {
        "standard": spec.name, "protocol": spec.protocol, "channels": spec.channels,
        "request_bytes": spec.request_size_bytes, "tck_ns": tck, "peak_bw_gbps": peak,
        "phase": shape.phase, "layers": shape.layers, "batch_size": shape.batch_size, "tokens": shape.tokens,
        "accounting_bytes": float(accounting_bytes), "accounting_bytes_per_token": accounting_bytes / shape.tokens,
        "stream_bytes": stream.total_bytes, "stream_read_bytes": stream.region_bytes(write=False),
        "stream_write_bytes": stream.region_bytes(write=True), "sampled_bytes": sampled_bytes,
        "sampled_requests": len(sample), "sample_windows": sample.windows,
        "sample_window_bytes": sample.window_lines * spec.request_size_bytes, "sample_scale": sample.scale,
        "sample_region_share": sample.region_share(),
        "simulated_cycles": result.cycles, "sample_bw_gbps": sample_bw, "achieved_bw_gbps": achieved,
        "bw_efficiency": achieved / peak, "fill_drain_overhead_ns": overhead_ns,
        "row_hit_rate": row_hits / read_cmds if read_cmds else 0.0,
        "step_time_ns": step_ns, "time_per_token_ns": step_ns / shape.tokens,
        "roofline_step_time_ns": roofline_ns, "roofline_time_per_token_ns": roofline_ns / shape.tokens,
        "slowdown_vs_roofline": step_ns / roofline_ns if roofline_ns else float("nan"),
        "energy_per_token_nj": (command_pj * sample.scale + (energy_pj - command_pj) * step_ns / sim_ns)
        / shape.tokens / 1e3,
        "energy_per_bit_pj": energy_pj / (sampled_bytes * 8), "average_power_w": energy_pj / sim_ns / 1e3,
        **_latency_summary(result.read_latencies, tck),
    }  # fmt: skip
    metrics["read_latencies_ns"] = result.read_latencies * tck
    return metrics
