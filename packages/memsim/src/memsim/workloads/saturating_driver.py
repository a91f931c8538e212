"""Drive a MemorySystem as a GPU's load/store units do: every request is ready at once, the memory sets the pace.

A decode step's weight and cache reads are independent loads, so nothing waits on a previous result;
what limits the step is how fast the channels drain. Each channel gets its own FIFO of the stream's
requests (in stream order) and takes one per cycle whenever its transaction queue has room, which is
what thousands of warps in flight look like from the controller. Cycles at which no channel can change
state are skipped, as in `TraceFrontend`. At the end the write buffers are flushed, so the step's
time includes its writes.
"""

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from memsim.controller import FOREVER
from memsim.memory_system import MemorySystem
from memsim.transaction import Transaction


@dataclass(frozen=True)
class DriveResult:
    """Cycles from the first request to the last completion, and every read's latency in cycles."""

    start_cycle: int
    end_cycle: int
    requests: int
    read_latencies: np.ndarray

    @property
    def cycles(self) -> int:
        return self.end_cycle - self.start_cycle


def run_saturating(system: MemorySystem, addrs: np.ndarray, is_write: np.ndarray,
                   progress: Callable[[int], None] | None = None) -> DriveResult:  # fmt: skip
    """Issue every request as early as its channel accepts it; return when all have completed."""
    channels = system.channels
    fifo: list[deque[tuple[int, bool]]] = [deque() for _ in channels]
    for addr, write in zip(addrs.tolist(), is_write.tolist(), strict=True):
        fifo[system.channel_of(addr)].append((addr, write))
    issued: list[Transaction] = []
    start = c = system.clk
    left = len(addrs)
    next_report = 0
    while left:
        for ctrl in channels:
            if ctrl.next_wake <= c:
                ctrl.tick(c)
        for ctrl, queue in zip(channels, fifo, strict=True):
            if queue and ctrl.will_accept(queue[0][1]):
                addr, write = queue.popleft()
                trans = Transaction(addr, write)
                ctrl.add(trans, c + 1)
                issued.append(trans)
                left -= 1
        nxt = min(ctrl.next_wake for ctrl in channels)
        c = max(c + 1, nxt) if nxt < FOREVER else c + 1
        if progress is not None and len(issued) >= next_report:
            progress(len(issued))
            next_report = len(issued) + 2048
    system.clk = c
    system.flush()
    if progress is not None:
        progress(len(issued))
    latencies = np.array([t.latency for t in issued if not t.is_write], dtype=np.int64)
    return DriveResult(start, system.clk, len(issued), latencies)
