"""The native AXI slave (the SimDRAM drop-in's, `native/axi_slave.cc`) driven from Python, one design clock
edge per call, and a master that replays `axi_traffic` bursts on it the way `hdl/axi_burst_master.v` does
and writes the same log, so `axi_traffic.check_log` checks its data and protocol without a simulator.

The slave has SimDRAM's timing: a handshake happens at an edge when the master's valid (this call's
inputs) meets the slave's ready of the previous call's outputs (and the same for R and B the other way).
"""

import ctypes
import random
import tempfile
from pathlib import Path

from memsim.cosim.axi_traffic import TrafficBurst
from memsim.cosim.native_config import write_native_config
from memsim.cosim.native_engine import load_library
from memsim.errors import MemsimError
from memsim.spec import DramSpec

_LL = ctypes.c_longlong
_UB = ctypes.POINTER(ctypes.c_ubyte)
OUTPUTS = ("ar_ready", "aw_ready", "w_ready", "r_valid", "r_id", "r_resp", "r_last", "b_valid", "b_id", "b_resp")


class NativeAxiSlave:
    """One AXI slave on memsim's native engine: memory [mem_base, mem_base + mem_size), a design clock."""

    def __init__(self, spec: DramSpec | str | Path, mem_base: int, mem_size: int, data_bytes: int, clock_hz: int = 0,
                 log: Path | None = None, build_dir: Path | None = None) -> None:  # fmt: skip
        self._lib = lib = load_library(build_dir)
        lib.memsim_slave_open.restype = ctypes.c_void_p
        lib.memsim_slave_open.argtypes = [ctypes.c_char_p, _LL, _LL, _LL, _LL, ctypes.c_char_p, ctypes.c_char_p,
                                          ctypes.c_int]  # fmt: skip
        lib.memsim_slave_close.argtypes = [ctypes.c_void_p]
        lib.memsim_slave_poke.argtypes = [ctypes.c_void_p, _LL, ctypes.c_char_p, _LL]
        lib.memsim_slave_tick.argtypes = [ctypes.c_void_p, ctypes.POINTER(_LL), ctypes.c_char_p, ctypes.POINTER(_LL),
                                          _UB, ctypes.c_char_p, ctypes.c_int]  # fmt: skip
        self.data_bytes, self.mem_base = data_bytes, mem_base
        err = ctypes.create_string_buffer(512)
        with tempfile.TemporaryDirectory() as tmp:
            config = write_native_config(spec, Path(tmp) / "memsim.cfg")
            self._handle = lib.memsim_slave_open(str(config).encode(), mem_base, mem_size, data_bytes, clock_hz,
                                                 str(log).encode() if log else None, err, len(err))  # fmt: skip
        if not self._handle:
            raise MemsimError(err.value.decode())
        self._in, self._out = (_LL * 16)(), (_LL * 10)()
        self._rdata = (ctypes.c_ubyte * data_bytes)()
        self._err = err

    def close(self) -> None:
        if self._handle:
            self._lib.memsim_slave_close(self._handle)
            self._handle = None

    def __del__(self) -> None:
        self.close()

    def poke(self, addr: int, data: bytes) -> None:
        """Write `data` at byte address `addr` straight into the backing memory (before traffic starts)."""
        self._lib.memsim_slave_poke(self._handle, addr - self.mem_base, data, len(data))

    def tick(self, inputs: list[int], w_data: bytes) -> tuple[dict[str, int], int]:
        """One edge: the master's outputs in (see engine_capi.cc for the order); the slave's next outputs and
        its read data (as an integer) out."""
        self._in[:] = inputs
        if self._lib.memsim_slave_tick(self._handle, self._in, w_data, self._out, self._rdata, self._err,
                                       len(self._err)) != 0:  # fmt: skip
            raise MemsimError(self._err.value.decode())
        return dict(zip(OUTPUTS, self._out, strict=True)), int.from_bytes(bytes(self._rdata), "little")


def replay(slave: NativeAxiSlave, traffic: list[TrafficBurst], log: Path, stall: int = 0, seed: int = 0,
           max_outstanding: int = 8, max_cycles: int = 10_000_000) -> int:  # fmt: skip
    """Run `traffic` as axi_burst_master does (in order, at most `max_outstanding`, barriers, random valid
    gaps and ready stalls of `stall` percent); write its log; return the cycles it took."""
    rng = random.Random(seed)
    nb = slave.data_bytes
    lines: list[str] = []
    prev, prev_rdata = dict.fromkeys(OUTPUTS, 0), 0
    nxt, outstanding, addr_k = 0, 0, -1  # addr_k: the burst on AR/AW now
    w_queue: list[tuple[int, int, bool]] = []  # beats of accepted AWs: (data, strobe, last)
    beat: tuple[int, int, bool] | None = None
    for cycle in range(max_cycles):
        if nxt == len(traffic) and outstanding == 0 and not w_queue and beat is None:
            log.write_text("\n".join(lines) + "\n")
            return cycle
        item = traffic[addr_k] if addr_k >= 0 else None
        b = item.burst if item else None
        ar = item is not None and not item.is_write
        aw = item is not None and item.is_write
        r_ready, b_ready = int(rng.randrange(100) >= stall), int(rng.randrange(100) >= stall)
        inputs = [0, int(ar), b.addr if ar else 0, b.id if ar else 0, b.size if ar else 0, b.length - 1 if ar else 0,
                  int(aw), b.addr if aw else 0, b.id if aw else 0, b.size if aw else 0, b.length - 1 if aw else 0,
                  int(beat is not None), beat[1] if beat else 0, int(beat[2]) if beat else 0, r_ready, b_ready]  # fmt: skip
        w_data = (beat[0] if beat else 0).to_bytes(nb, "little")
        out, rdata = slave.tick(inputs, w_data)
        # handshakes of this edge: valid now, ready from the previous edge's outputs
        if prev["r_valid"] and r_ready:
            lines.append(f"R {prev['r_id']} {prev_rdata:x} {prev['r_last']} {prev['r_resp']} {cycle}")
            outstanding -= prev["r_last"]
        if prev["b_valid"] and b_ready:
            lines.append(f"B {prev['b_id']} {prev['b_resp']} {cycle}")
            outstanding -= 1
        if (ar and prev["ar_ready"]) or (aw and prev["aw_ready"]):
            lines.append(f"{'AW' if aw else 'AR'} {addr_k} {cycle}")
            if aw:
                n = len(item.wbeats)
                w_queue += [(d, s, i == n - 1) for i, (d, s) in enumerate(item.wbeats)]
            addr_k = -1
        if beat is not None and prev["w_ready"]:
            beat = None
        # what the master presents at the next edge
        free = outstanding < max_outstanding and rng.randrange(100) >= stall
        if addr_k < 0 and nxt < len(traffic) and free and (not traffic[nxt].barrier or outstanding == 0):
            addr_k, nxt, outstanding = nxt, nxt + 1, outstanding + 1
        if beat is None and w_queue and rng.randrange(100) >= stall:
            beat = w_queue.pop(0)
        prev, prev_rdata = out, rdata
    raise MemsimError(f"the traffic did not finish within {max_cycles} cycles")
