"""A memsim-backed AXI4 slave for cocotb: bursts, strobes, narrow transfers, IDs, backpressure, two clocks.

`AxiMemory(dut, system, prefix="s_axi")` serves the five channels of a DUT's AXI4 master port (signal
names as cocotbext-axi's: `s_axi_araddr`, `s_axi_rdata`, ...). Each burst becomes one memsim request per
memory line it touches (`memsim.cosim.axi_burst`), handed to memsim in arrival order, per design cycle as
many reads (and writes) as memory cycles passed, at least one; a write with partial strobes merges into
the line's current data (a masked write). Read data is what memsim's functional store returns.

Timing contract (tested): a line request handed to memsim at design edge `a` (the burst's handshake edge
when memsim has room) enters at memory cycle `clocks.memory_cycles(a)`; if memsim completes it `L` memory
cycles later, its data reaches the design at edge `a + clocks.design_cycles(L) + PORT_CYCLES`. So the
unloaded read latency, from the AR handshake to the first R handshake, is ceil(L x tCK / design period)
+ PORT_CYCLES design cycles.

Protocol, per AXI4: read data of one ID in AR order and write responses of one ID in AW order; bursts of
different IDs complete out of order as memsim finishes them; read bursts are not interleaved beat by
beat (a started burst is finished first); W beats follow AW order and WREADY waits for the AW.
The port samples and drives at the falling edge, so it serves designs whose outputs change on the
rising edge; an RREADY/BREADY that reacts combinationally to RVALID/BVALID is read again after it settles.
"""

import random
from collections import deque
from typing import Any

import cocotb
from cocotb.triggers import FallingEdge, ReadOnly

from memsim.cosim.axi_burst import AxiBurst, AxiProtocolError, BurstType, beat_lines, lane_mask
from memsim.cosim.clock_domains import ClockDomains
from memsim.memory_system import MemorySystem
from memsim.transaction import Transaction

PORT_CYCLES = 1
"""Design cycles the port adds to memsim's latency: the response's register into the design's clock domain."""


class _LineRequest:
    """One memsim request of a burst, and the design edge from which its result may reach the design."""

    __slots__ = ("add_edge", "data", "line", "trans")

    def __init__(self, line: int) -> None:
        self.line = line
        self.data: dict[int, int] | None = None  # writes: offset in the line -> byte, merged when handed over
        self.trans: Transaction | None = None
        self.add_edge = -1


class _Burst:
    """A burst in flight: its beats, its line requests, and the edges of its handshakes."""

    def __init__(self, burst: AxiBurst, data_bytes: int, line_bytes: int, accept_edge: int) -> None:
        self.burst = burst
        self.beats = burst.beats(data_bytes)
        self.lines = {line: _LineRequest(line) for line in burst.lines(data_bytes, line_bytes)}
        self.beat_lines = [[self.lines[x] for x in beat_lines(b, data_bytes, line_bytes)] for b in self.beats]
        self.last_beat = {id(req): i for i, reqs in enumerate(self.beat_lines) for req in reqs}
        self.accept_edge = accept_edge
        self.next_beat = 0  # reads: the next R beat; writes: the next W beat
        self.response_edges: list[int] = []  # edges of the R (or B) handshakes


class AxiMemory:
    """Serves `dut`'s AXI4 master port named `prefix` from `system` (functional mode)."""

    def __init__(self, dut: Any, system: MemorySystem, prefix: str = "s_axi", clock: str = "clk",
                 reset: str | None = "rst", clocks: ClockDomains | None = None, max_bursts: int = 16,
                 stall: float = 0.0, seed: int = 0) -> None:  # fmt: skip
        if system.store is None:
            raise AxiProtocolError("AxiMemory serves data: build the MemorySystem with functional=True")
        self.dut, self.system = dut, system
        self.clk = getattr(dut, clock)
        self.rst = getattr(dut, reset) if reset and hasattr(dut, reset) else None
        self.clocks = clocks or ClockDomains.from_mhz(system.spec.tCK_ns)
        self.max_bursts = max_bursts
        self.stall, self.rng = stall, random.Random(seed)
        self.sig = {name: getattr(dut, f"{prefix}_{name}") for name in _SIGNALS if hasattr(dut, f"{prefix}_{name}")}
        missing = [name for name in _REQUIRED if name not in self.sig]
        if missing:
            raise AxiProtocolError(f"DUT has no {', '.join(prefix + '_' + m for m in missing)}; AxiMemory needs "
                                   "the AXI4 channel signals named as cocotbext-axi's (prefix_araddr, ...)")  # fmt: skip
        self.data_bytes = len(self.sig["rdata"]) // 8
        self.line_bytes = system.line_bytes
        self.edge = 0  # the rising edge the handshakes decided at this falling edge happen on
        self.reads: dict[int, deque[_Burst]] = {}  # per ID, in AR order
        self.writes: dict[int, deque[_Burst]] = {}  # per ID, in AW order
        self.w_order: deque[_Burst] = deque()  # write bursts still owed W beats, in AW order
        self.read_fifo: deque[_LineRequest] = deque()  # line requests not yet in memsim, in arrival order
        self.write_fifo: deque[_LineRequest] = deque()
        self.in_flight = 0
        self.sending: _Burst | None = None  # the read burst on the R channel
        self.accepted_reads: list[_Burst] = []  # every read burst, in AR order (records for tests and tools)
        self.accepted_writes: list[_Burst] = []
        self._driven: dict[str, int] = {}
        self._stopping = False
        self._in_reset = False

    # ---- helpers
    def _get(self, name: str, default: int = 0) -> int:
        sig = self.sig.get(name)
        return default if sig is None else self._get_of(sig)

    def _drive(self, name: str, value: int) -> None:
        if self._driven.get(name) != value and name in self.sig:
            self.sig[name].value = value
            self._driven[name] = value

    def _stalled(self) -> bool:
        return self.stall > 0 and self.rng.random() < self.stall

    def _address(self, ch: str) -> AxiBurst:
        kind = self._get(ch + "burst", BurstType.INCR)
        if kind > BurstType.WRAP:
            raise AxiProtocolError(
                f"{ch.upper()}BURST = {kind} is reserved in AXI4; use FIXED (0), INCR (1) or WRAP (2)"
            )
        burst = AxiBurst(self._get(ch + "id"), self._get(ch + "addr"), self._get(ch + "len") + 1,
                         self._get(ch + "size", (self.data_bytes - 1).bit_length()), BurstType(kind))  # fmt: skip
        burst.check(self.data_bytes)
        for line in burst.lines(self.data_bytes, self.line_bytes):
            self.system.mapping.check(line)
        return burst

    def _ready_edge(self, req: _LineRequest) -> int | None:
        """The edge from which the request's result may reach the design; None while memsim has not decided it."""
        trans = req.trans
        if trans is None or trans.complete_cycle < 0:
            return None
        return req.add_edge + self.clocks.design_cycles(trans.latency) + PORT_CYCLES

    def _ready(self, reqs: list[_LineRequest]) -> bool:
        for req in reqs:
            at = self._ready_edge(req)
            if at is None or at > self.edge:
                return False
        return True

    def _idle(self) -> None:
        for name in ("arready", "awready", "wready", "rvalid", "bvalid"):
            self._drive(name, 0)

    def stop(self) -> None:
        """Stop serving at the next falling edge, leaving every ready and valid low."""
        self._stopping = True

    async def _watch_reset(self) -> None:
        while True:
            self._in_reset = bool(self._get_of(self.rst))
            await self.rst.value_change

    @staticmethod
    def _get_of(sig: Any) -> int:
        try:
            return int(sig.value)
        except ValueError:  # X or Z (before reset): nothing valid, nothing ready
            return 0

    # ---- the per-cycle step
    async def serve(self, cycles: int | None = None) -> None:
        """Serve the port for `cycles` design cycles, or until `stop()` (start it with cocotb.start_soon)."""
        self._idle()
        watcher = cocotb.start_soon(self._watch_reset()) if self.rst is not None else None
        n = 0
        while cycles is None or n < cycles:
            await FallingEdge(self.clk)
            if self._stopping:
                break
            n += 1
            self.edge += 1
            if self._in_reset:
                self._idle()
                continue
            self.system.run_until(self.clocks.memory_cycles(self.edge))
            self._address_channels()
            self._w_channel()
            self._issue_lines()
            await self._response_channels()
        self._idle()
        if watcher is not None:
            watcher.cancel()

    def _issue_lines(self) -> None:
        """Hand line requests to memsim in arrival order: as many reads and writes as memory cycles passed, at least one."""
        system, edge = self.system, self.edge
        budget = max(1, self.clocks.memory_cycles(edge) - self.clocks.memory_cycles(edge - 1))
        for fifo, is_write in ((self.read_fifo, False), (self.write_fifo, True)):
            for _ in range(budget):
                if not fifo or not system.will_accept(fifo[0].line, is_write):
                    break
                req = fifo.popleft()
                data = None
                if is_write:
                    merged = bytearray(system.peek(req.line))
                    for offset, value in req.data.items():
                        merged[offset] = value
                    data = bytes(merged)
                req.trans = system.add_transaction(req.line, is_write, data)
                req.add_edge = edge

    def _address_channels(self) -> None:
        for ch, table in (("ar", self.reads), ("aw", self.writes)):
            ready = 0
            if self.in_flight < self.max_bursts and not self._stalled() and self._get(ch + "valid"):
                burst = _Burst(self._address(ch), self.data_bytes, self.line_bytes, self.edge)
                table.setdefault(burst.burst.id, deque()).append(burst)
                self.in_flight += 1
                if ch == "ar":
                    self.accepted_reads.append(burst)
                    self.read_fifo.extend(burst.lines.values())
                else:
                    self.accepted_writes.append(burst)
                    self.w_order.append(burst)
                    for req in burst.lines.values():
                        req.data = {}
                ready = 1
            self._drive(ch + "ready", ready)

    def _w_channel(self) -> None:
        ready = 0
        if self.w_order and not self._stalled() and self._get("wvalid"):
            burst = self.w_order[0]
            i = burst.next_beat
            beat = burst.beats[i]
            data = self._get("wdata")
            strb = self._get("wstrb", (1 << self.data_bytes) - 1) & lane_mask(beat)
            base = beat.addr - beat.addr % self.data_bytes
            for lane in range(beat.lane_lo, beat.lane_hi + 1):
                if strb >> lane & 1:
                    addr = base + lane
                    line = addr - addr % self.line_bytes
                    burst.lines[line].data[addr - line] = (data >> (8 * lane)) & 0xFF
            last = i == len(burst.beats) - 1
            if bool(self._get("wlast", int(last))) != last:
                raise AxiProtocolError(f"WLAST = {int(not last)} on beat {i} of {len(burst.beats)} of AW id "
                                       f"{burst.burst.id} at {burst.burst.addr:#x}; WLAST marks the last beat only")  # fmt: skip
            burst.next_beat = i + 1
            for req in burst.beat_lines[i]:
                if burst.last_beat[id(req)] == i:
                    self.write_fifo.append(req)  # the line's last beat arrived
            if last:
                self.w_order.popleft()
            ready = 1
        self._drive("wready", ready)

    async def _response_channels(self) -> None:
        r_burst = self._next_read()
        if r_burst is not None:
            self._drive("rvalid", 1)
            self._drive("rid", r_burst.burst.id)
            self._drive("rdata", self._beat_data(r_burst, r_burst.next_beat))
            self._drive("rlast", int(r_burst.next_beat == len(r_burst.beats) - 1))
            self._drive("rresp", 0)
        else:
            self._drive("rvalid", 0)
        b_burst = self._next_write_response()
        if b_burst is not None:
            self._drive("bvalid", 1)
            self._drive("bid", b_burst.burst.id)
            self._drive("bresp", 0)
        else:
            self._drive("bvalid", 0)
        if r_burst is None and b_burst is None:
            return
        r_ready, b_ready = self._get("rready", 1), self._get("bready", 1)
        if (r_burst is not None and not r_ready) or (b_burst is not None and not b_ready):
            await ReadOnly()  # a ready that follows our valid combinationally has settled now
            r_ready, b_ready = self._get("rready", 1), self._get("bready", 1)
        if r_burst is not None and r_ready:
            r_burst.response_edges.append(self.edge)
            r_burst.next_beat += 1
            if r_burst.next_beat == len(r_burst.beats):
                self._retire(self.reads, r_burst)
                self.sending = None
        if b_burst is not None and b_ready:
            b_burst.response_edges.append(self.edge)
            self._retire(self.writes, b_burst)

    def _retire(self, table: dict[int, deque[_Burst]], burst: _Burst) -> None:
        table[burst.burst.id].popleft()
        self.in_flight -= 1

    def _next_read(self) -> _Burst | None:
        """The read burst whose next beat goes out now: the one being sent, else the oldest ready ID head."""
        if self.sending is not None:
            b = self.sending
            return b if self._ready(b.beat_lines[b.next_beat]) else None
        heads = [q[0] for q in self.reads.values() if q]
        for b in sorted(heads, key=lambda x: x.accept_edge):
            if self._ready(b.beat_lines[0]):
                self.sending = b
                return b
        return None

    def _next_write_response(self) -> _Burst | None:
        heads = [q[0] for q in self.writes.values() if q]
        for b in sorted(heads, key=lambda x: x.accept_edge):
            if b.next_beat == len(b.beats) and self._ready(list(b.lines.values())):
                return b
        return None

    def _beat_data(self, burst: _Burst, i: int) -> int:
        beat = burst.beats[i]
        base = beat.addr - beat.addr % self.data_bytes
        value = 0
        for lane in range(beat.lane_lo, beat.lane_hi + 1):
            addr = base + lane
            line = addr - addr % self.line_bytes
            data = burst.lines[line].trans.data
            if data is not None:
                value |= data[addr - line] << (8 * lane)
        return value


_REQUIRED = ("araddr", "arvalid", "arready", "awaddr", "awvalid", "awready", "wdata", "wvalid", "wready",
             "rdata", "rvalid", "rready", "bvalid", "bready")  # fmt: skip
_SIGNALS = (*_REQUIRED, "arid", "arlen", "arsize", "arburst", "awid", "awlen", "awsize", "awburst", "wstrb", "wlast",
            "rid", "rresp", "rlast", "bid", "bresp")  # fmt: skip
