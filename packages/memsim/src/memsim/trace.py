"""DRAMSim3's trace format (`0xADDR READ|WRITE CYCLE` per line) and its trace-driven frontend.

The frontend behaves as DRAMSim3's `TraceBasedCPU`: it holds one line at a time, offers it once the
clock reaches its cycle, and at most one request enters per cycle; a refused line waits (and blocks
the lines after it). Two end-of-file quirks of the C++ stream reading are reproduced for DRAMSim3 traces
because they change counts: a last line that ends with a newline is followed by one extra read of the same
address (offered once), and a last line without a newline is offered only once. Addresses may be 64-bit
(Valgrind, Pin); one beyond the memory's capacity is an error unless the system wraps (`wrap=True`,
`--wrap`), as DRAMSim3 does. Other formats (Ramulator 2's) are read by `memsim.trace_formats`.
"""

import os
from collections.abc import Callable
from pathlib import Path

import numpy as np

from memsim.compiled import bridge, library
from memsim.errors import MemsimError
from memsim.memory_system import MemorySystem
from memsim.trace_data import Trace, address_array
from memsim.trace_formats import detect_format, parse_ramulator2_text
from memsim.transaction import Transaction

__all__ = ["Trace", "TraceFrontend", "address_array", "format_trace", "parse_trace_text", "read_trace"]

WRITE_OPS = frozenset(("WRITE", "P_MEM_WR", "BOFF"))
READ_OPS = frozenset(("READ", "P_MEM_RD", "P_FETCH"))
ENGINES = ("auto", "python", "compiled")


def parse_trace_text(text: str, source: str = "<trace>") -> Trace:
    """Parse trace text; a malformed line is an error naming its number and text."""
    fast = _parse_compiled(text, source) if len(text) > 1 << 16 else None
    return fast if fast is not None else _parse_lines(text, source)


def _parse_compiled(text: str, source: str) -> Trace | None:
    """The C++ parser (`native/trace_parse.cc`) on a plain trace (None: no C++ engine, not wanted, or not plain)."""
    if os.environ.get("MEMSIM_ENGINE") == "python" or not text.isascii() or library.why_unavailable() is not None:
        return None
    names = sorted(WRITE_OPS | READ_OPS)
    data = text.encode("ascii")
    lines = text.count("\n") + 1
    addrs, writes, cycles = (np.zeros(lines, dtype=np.int64) for _ in range(3))
    codes = np.array([int.from_bytes(n.encode(), "big") for n in names], dtype=np.int64)  # as the parser packs ops
    is_write = np.array([name in WRITE_OPS for name in names], dtype=np.int64)
    k = library.load_library().memsim_parse_plain(data, len(data), library.pointer(codes), library.pointer(is_write),
                                                  len(names), *(library.pointer(x) for x in (addrs, writes, cycles)))  # fmt: skip
    if k < 0:
        return None
    return Trace(addrs[:k], writes[:k].astype(bool), cycles[:k], text.endswith("\n"), source)


def _parse_lines(text: str, source: str) -> Trace:
    addrs, writes, cycles = [], [], []
    for lineno, line in enumerate(text.splitlines(), start=1):
        parts = line.split()
        if not parts or parts[0].startswith("#"):
            continue
        try:
            if len(parts) != 3:
                raise ValueError
            addr = int(parts[0], 16)
            op = parts[1].upper()
            cycle = int(parts[2])
            if addr < 0 or cycle < 0 or op not in WRITE_OPS | READ_OPS:
                raise ValueError
        except ValueError:
            raise MemsimError(
                f"{source}:{lineno}: malformed trace line {line!r}; expected '0xADDR READ|WRITE CYCLE'"
            ) from None
        if addr >= 1 << 64:
            raise MemsimError(f"{source}:{lineno}: address {parts[0]} has more than 64 bits")
        addrs.append(addr)
        writes.append(op in WRITE_OPS)
        cycles.append(cycle)
    return Trace(address_array(addrs), np.array(writes, dtype=bool), np.array(cycles, dtype=np.int64),
                 text.endswith("\n"), source)  # fmt: skip


def format_trace(trace: Trace) -> str:
    """A trace as DRAMSim3 trace text (`0xADDR READ|WRITE CYCLE` lines, newline-terminated)."""
    ops = np.where(trace.is_write, "WRITE", "READ")
    return "".join(f"{a:#x} {o} {c}\n" for a, o, c in zip(trace.addrs.tolist(), ops.tolist(), trace.cycles.tolist(),
                                                             strict=True))  # fmt: skip


TRACE_FORMATS = ("auto", "dramsim3", "ramulator2")


def read_trace(path: str | Path, fmt: str = "auto", spec=None) -> Trace:
    """Read a trace file in DRAMSim3's format or Ramulator 2's (`memsim.trace_formats`); "auto" tells them apart
    by the first line. A Ramulator 2 read/write trace gives DRAM coordinates, so it needs the `spec`."""
    if fmt not in TRACE_FORMATS:
        raise MemsimError(f"trace format {fmt!r}; allowed: {', '.join(TRACE_FORMATS)}")
    path = Path(path)
    if not path.is_file():
        raise MemsimError(f"trace file {path} does not exist")
    text = path.read_text()
    if fmt == "auto":
        fmt = detect_format(text)
    if fmt == "ramulator2":
        return parse_ramulator2_text(text, spec, source=str(path))
    return parse_trace_text(text, source=str(path))


class TraceFrontend:
    """Feeds a trace into a MemorySystem the way DRAMSim3's trace CPU does, skipping idle cycles."""

    def __init__(self, system: MemorySystem, trace: Trace, check_capacity: bool = True,
                 write_data: Callable[[int], bytes] | None = None) -> None:  # fmt: skip
        """`write_data(i)`: the bytes the i-th request writes (functional runs, Python engine; default none);
        with it, the accepted transactions are kept in `accepted`, in order."""
        self.system = system
        self.write_data = write_data
        self.accepted: list[Transaction] | None = [] if write_data is not None else None
        addrs = trace.addrs
        # wrapped, an address keeps its identity (as in DRAMSim3: no merging or forwarding between two addresses
        # that differ above the capacity) and is decoded without its high bits
        if check_capacity and not system.wrap and len(trace):
            system.mapping.check(int(addrs.max()))
        locations = system.mapping.wrap_array(addrs) if system.wrap else addrs.astype(np.int64)
        self.addrs = addrs.tolist()
        self.writes = trace.is_write.tolist()
        self.cycles = trace.cycles.tolist()
        if trace.eof_quirks and trace.ends_with_newline and self.addrs:
            self.addrs.append(self.addrs[-1])
            self.writes.append(False)
            self.cycles.append(self.cycles[-1])
        self.n = len(self.addrs)
        self.one_shot = self.n - 1 if self.n and trace.eof_quirks else -1  # the last entry is offered only once
        self.index = 0
        if self.one_shot == 0 and self.cycles[0] > 0:
            self.index = self.n  # read at cycle 0, not yet due, then end of file: never offered
        if trace.eof_quirks and trace.ends_with_newline and len(locations):
            locations = np.append(locations, locations[-1])
        self.locations = locations
        self.channel_of = system.mapping.decode_array(locations)["ch"].tolist()

    def run(self, num_cycles: int, progress=None, engine: str = "auto") -> None:
        """Simulate cycles [system.clk, num_cycles); `progress(cycle)` is called now and then.

        `engine`: "python", "compiled" (memsim's C++ engine, built with the system's compiler on first use; needs a
        fresh system) or "auto" (compiled when it can run this, else Python; the MEMSIM_ENGINE variable overrides
        "auto"). Both give identical results.
        """
        if self._use_compiled(engine):
            bridge.run_compiled(self, num_cycles, progress)
            return
        system = self.system
        channels = system.channels
        c = system.clk
        next_report = c
        while c < num_cycles:
            for ctrl in channels:
                if ctrl.next_wake <= c:
                    ctrl.tick(c)
            front = self._offer(c)
            nxt = min(ctrl.next_wake for ctrl in channels)
            if front < nxt:
                nxt = front
            c = max(nxt, c + 1)
            if progress is not None and c >= next_report:
                progress(min(c, num_cycles))
                next_report = c + 100_000
        system.clk = num_cycles

    def _use_compiled(self, engine: str) -> bool:
        """Whether the compiled engine runs this; an explicit engine="compiled" that cannot is an error saying why."""
        if engine == "auto":
            engine = os.environ.get("MEMSIM_ENGINE", "auto")
        if engine not in ENGINES:
            raise MemsimError(f"engine {engine!r}; allowed: {', '.join(ENGINES)}")
        if engine == "python":
            return False
        if self.write_data is not None:
            if engine != "auto":
                raise MemsimError(f"engine {engine!r} cannot run a trace with write data; use engine='python'")
            return False
        missing = bridge.unsupported(self.system.spec)
        if missing is not None:
            why = f"it does not model {missing}"
        elif not bridge.is_fresh(self):
            why = "the system has already simulated or queued something (the compiled engine starts fresh)"
        else:
            why = library.why_unavailable()
            if why is None:
                return True
        if engine == "auto":
            return False
        raise MemsimError(f"engine {engine!r} cannot run: {why}; use engine='python'")

    def _offer(self, c: int) -> int:
        """Offer the held line at cycle c; return the next cycle the frontend needs to act."""
        i = self.index
        if i >= self.n:
            return 1 << 62
        if self.cycles[i] > c:
            return self.cycles[i]
        ctrl = self.system.channels[self.channel_of[i]]
        if ctrl.will_accept(self.writes[i]):
            write = self.writes[i]
            data = self.write_data(i) if write and self.write_data is not None else None
            trans = Transaction(self.addrs[i], write, data, tag=i)
            ctrl.add(trans, c + 1)
            if self.accepted is not None:
                self.accepted.append(trans)
            j = self.index = i + 1
            if j >= self.n:
                return 1 << 62
            if j == self.one_shot and self.cycles[j] > c + 1:
                self.index = self.n  # read next cycle but not yet due, then end of file: dropped
                return 1 << 62
            return max(c + 1, self.cycles[j])
        if i == self.one_shot:
            self.index = self.n  # DRAMSim3 hits end of file and never offers it again
            return 1 << 62
        return ctrl.next_wake
