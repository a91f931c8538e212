"""Seeded synthetic traffic (numpy, vectorised): random traffic with a hot set for fuzzing the controller and
the checker, and streaming traffic; both are also the traces of memsim's own DRAMSim3 comparison runs."""

import numpy as np

from memsim.spec import DramSpec
from memsim.trace import Trace


def random_trace(spec: DramSpec, n: int, seed: int = 0, write_fraction: float = 0.3, max_gap: int = 8,
                 locality: float = 0.5, hot_lines: int = 64, high_bits: bool = False) -> Trace:  # fmt: skip
    """n requests: a mix of random lines and a small hot set (row hits, same-address reuse, RAW/WAR).

    `high_bits`: random bits above the capacity, up to bit 63, as in a 64-bit trace from Valgrind or Pin (such
    a trace needs wrapping: `MemorySystem(..., wrap=True)`)."""
    rng = np.random.default_rng(seed)
    lines = spec.capacity_bytes // spec.request_size_bytes
    cold = rng.integers(0, lines, size=n, dtype=np.int64)
    hot = rng.integers(0, min(lines, hot_lines), size=n, dtype=np.int64)
    line = np.where(rng.random(n) < locality, hot, cold)
    gaps = rng.integers(0, max_gap + 1, size=n, dtype=np.int64)
    addrs = line * spec.request_size_bytes
    writes = rng.random(n) < write_fraction
    if high_bits:
        capacity_bits = spec.capacity_bytes.bit_length() - 1
        high = rng.integers(0, 1 << (64 - capacity_bits), size=n, dtype=np.uint64)
        addrs = addrs.astype(np.uint64) | (high << np.uint64(capacity_bits))
    return Trace(addrs, writes, np.cumsum(gaps), True, "<random>")


def stream_trace(spec: DramSpec, n: int, seed: int = 0, write_fraction: float = 0.3, max_gap: int = 2) -> Trace:
    """n requests to consecutive lines from a random start (wrapping at the capacity), reads and writes mixed."""
    rng = np.random.default_rng(seed)
    lines = spec.capacity_bytes // spec.request_size_bytes
    line = (rng.integers(0, lines) + np.arange(n, dtype=np.int64)) % lines
    gaps = rng.integers(0, max_gap + 1, size=n, dtype=np.int64)
    return Trace(line * spec.request_size_bytes, rng.random(n) < write_fraction, np.cumsum(gaps), True, "<stream>")
