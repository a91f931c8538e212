"""The memory system: one controller per channel behind one address mapping, driven from Python.

Usage follows DRAMSim3's: `add_transaction` (when `will_accept`), then advance time; a transaction added
now is seen by the next simulated cycle. `advance` skips cycles at which no channel can change state,
so idle time costs nothing. Completion callbacks fire at the cycle DRAMSim3 would return the request,
with the data read (functional mode) in `Transaction.data`.
"""

import heapq
from collections.abc import Callable
from itertools import count
from pathlib import Path
from typing import Any

from memsim.address_mapping import build_address_mapping
from memsim.backing_store import BackingStore
from memsim.channel_state import ChannelState
from memsim.controller import FOREVER, ChannelController
from memsim.errors import MemsimError
from memsim.spec import DramSpec, load_spec
from memsim.stats import channel_stats
from memsim.timing_table import build_constraints, build_windows, compile_offsets
from memsim.transaction import Transaction


class MemorySystem:
    """Channels, their shared address mapping and (optionally) the functional backing store."""

    def __init__(self, spec: DramSpec | str | Path, functional: bool = True, mode: str | None = None,
                 strict: bool = False, wrap: bool = False) -> None:  # fmt: skip
        """`spec`: a DramSpec, a DRAMSim3 .ini path or a preset name; `mode` ("dramsim3" / "jedec") overrides
        the config's (see `load_spec`); `strict` makes config problems errors; `wrap` takes addresses beyond
        the capacity modulo the capacity, as DRAMSim3 does (default: such an address is an error)."""
        self.spec = load_spec(spec, mode=mode, strict=strict)
        self.wrap = wrap
        self.mapping = build_address_mapping(self.spec)
        self.constraints = build_constraints(self.spec)
        windows = build_windows(self.spec)
        offsets = compile_offsets(self.spec, self.constraints)
        self.store = BackingStore(self.spec.request_size_bytes) if functional else None
        self.channels = [
            ChannelController(ch, self.spec, self.mapping, ChannelState(self.spec, offsets, windows), self.store)
            for ch in range(self.spec.channels)
        ]
        self.clk = 0  # cycles simulated so far = the cycle the next tick simulates
        self._callbacks: list[tuple[int, int, Transaction]] = []
        self._order = count()
        for ctrl in self.channels:
            ctrl.on_complete = self._schedule_callback

    @property
    def line_bytes(self) -> int:
        return self.spec.request_size_bytes

    def channel_of(self, addr: int) -> int:
        return self.mapping.decode(self.mapping.wrap(addr)).channel

    def will_accept(self, addr: int, is_write: bool) -> bool:
        """Whether `add_transaction` would be accepted now (its transaction queue has room)."""
        return self.channels[self.channel_of(addr)].will_accept(is_write)

    def add_transaction(self, addr: int, is_write: bool, data: bytes | None = None,
                        callback: Callable[[Transaction], Any] | None = None, tag: Any = None) -> Transaction:  # fmt: skip
        """Queue a request (check `will_accept` first); its callback fires when it completes."""
        if self.wrap:
            addr = self.mapping.wrap(addr)
        else:
            self.mapping.check(addr)
        ctrl = self.channels[self.channel_of(addr)]
        if not ctrl.will_accept(is_write):
            raise MemsimError(f"channel {ctrl.channel} transaction queue is full at cycle {self.clk}; "
                              "call will_accept() first and retry after advancing time")  # fmt: skip
        if data is not None:
            if not is_write:
                raise MemsimError("a read carries no data; pass data only with is_write=True")
            if len(data) != self.line_bytes or addr % self.line_bytes:
                raise MemsimError(f"functional writes are whole {self.line_bytes}-byte requests at aligned "
                                  f"addresses; got {len(data)} bytes at {addr:#x}")  # fmt: skip
        trans = Transaction(addr, is_write, data, callback, tag)
        ctrl.add(trans, self.clk)
        return trans

    def _schedule_callback(self, trans: Transaction) -> None:
        if trans.callback is not None:
            heapq.heappush(self._callbacks, (trans.complete_cycle, next(self._order), trans))

    def next_event_cycle(self) -> int:
        """The next cycle at which anything (a channel or a pending callback) can happen."""
        nxt = min(ctrl.next_wake for ctrl in self.channels)
        if self._callbacks:
            nxt = min(nxt, self._callbacks[0][0])
        return max(nxt, self.clk)

    def tick(self) -> None:
        """Simulate one cycle."""
        c = self.clk
        while self._callbacks and self._callbacks[0][0] <= c:
            trans = heapq.heappop(self._callbacks)[2]
            trans.callback(trans)
        for ctrl in self.channels:
            if ctrl.next_wake <= c:
                ctrl.tick(c)
        self.clk = c + 1

    def advance(self, cycles: int) -> None:
        """Simulate `cycles` cycles, skipping those at which nothing can happen."""
        self.run_until(self.clk + cycles)

    def run_until(self, end: int) -> None:
        """Simulate up to (not including) cycle `end`."""
        while self.clk < end:
            nxt = self.next_event_cycle()
            if nxt >= end:
                self.clk = end
                return
            self.clk = nxt
            self.tick()

    def drain(self, limit: int = 10_000_000) -> None:
        """Advance until every read has completed and every callback fired.

        Writes complete (and call back) when accepted; like DRAMSim3, a few may stay in the write buffer
        until more arrive. Their data is visible to reads (forwarding) and to `peek`; `flush` writes them.
        """
        stop = self.clk + limit
        while self.clk < stop:
            busy = any(c.read_queue or c.pending_reads for c in self.channels)
            if not busy and not self._callbacks:
                return
            nxt = self.next_event_cycle()
            if nxt >= FOREVER // 2:
                return
            self.clk = nxt
            self.tick()
        raise MemsimError(f"memory did not drain within {limit} cycles")

    def flush(self, limit: int = 10_000_000) -> None:
        """Advance until the write buffers are empty, so the backing store holds every write."""
        for ctrl in self.channels:
            ctrl.flushing = True
            ctrl.cmdq.dirty = True
            ctrl.next_wake = min(ctrl.next_wake, self.clk)
        stop = self.clk + limit
        try:
            while any(c.pending_writes for c in self.channels):
                if self.clk >= stop:
                    raise MemsimError(f"write buffers did not empty within {limit} cycles")
                self.clk = self.next_event_cycle()
                self.tick()
            self.drain(limit)
        finally:
            for ctrl in self.channels:
                ctrl.flushing = False

    def peek(self, addr: int) -> bytes:
        """The data a read of `addr` would return now (buffered write data included), without timing."""
        if self.store is None:
            raise MemsimError("peek needs functional=True")
        if self.wrap:
            addr = self.mapping.wrap(addr)
        ctrl = self.channels[self.channel_of(addr)]
        if addr in ctrl.pending_writes:
            data = ctrl.pending_write_data[addr]
            if data is not None:
                return data
        return self.store.read(addr)

    def stats(self, num_cycles: int | None = None) -> dict[str, dict[str, Any]]:
        """DRAMSim3's stats, one object per channel keyed by channel number, over the cycles run."""
        n = self.clk if num_cycles is None else num_cycles
        epochs = n // self.spec.epoch_period
        return {str(ctrl.channel): channel_stats(ctrl, n, epoch_num=epochs) for ctrl in self.channels}

    def issued_commands(self) -> list[tuple[int, int, int, int, int, int, int, bool]]:
        """Every command issued, as (cycle, channel, cmd, rank, flat bank, row, column, row_hit), by cycle."""
        out = [(c[0], ctrl.channel, *c[1:]) for ctrl in self.channels for c in ctrl.commands]
        out.sort(key=lambda c: c[0])
        return out
