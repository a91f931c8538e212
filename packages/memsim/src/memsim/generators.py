"""DRAMSim3's address generators (`dramsim3main -s random|stream`), reproduced request for request.

Both draw from C++'s `std::mt19937_64` with its default seed (5489), implemented here from the published
algorithm (Matsumoto and Nishimura's 64-bit Mersenne Twister; the parameters are those the C++ standard fixes
for mt19937_64) and vectorised with numpy. Addresses are full 64-bit values, wrapped to the capacity as
DRAMSim3's address mapping does.
- `random`: each new request is `(gen(), gen() % 3 == 0)` (address, is write), offered every cycle until
  accepted, one per cycle: a trace whose lines are all due at cycle 0 (`random_generator_trace`).
- `stream`: three arrays a, b, c at random bases; each cycle it tries to add a read of a+offset, a read of
  b+offset and a write of c+offset, each once, and moves on by 64 bytes when all three are in; new bases every
  2 MiB. Up to three requests a cycle, so it has its own frontend (`StreamFrontend`, Python engine).
"""

import numpy as np

from memsim.errors import MemsimError
from memsim.memory_system import MemorySystem
from memsim.spec import DramSpec
from memsim.trace import Trace, TraceFrontend
from memsim.transaction import Transaction

GENERATORS = ("random", "stream")
_N, _M = 312, 156
_MATRIX_A = np.uint64(0xB5026F5AA96619E9)
_UPPER, _LOWER = np.uint64(0xFFFFFFFF80000000), np.uint64(0x7FFFFFFF)
STREAM_ARRAY_BYTES = 2 << 20  # DRAMSim3's StreamCPU array_size_ (compared with the byte offset)
STREAM_STRIDE = 64


class MersenneTwister64:
    """`std::mt19937_64`: `next(n)` returns the next n outputs as uint64."""

    def __init__(self, seed: int = 5489) -> None:
        mt = [seed & 0xFFFFFFFFFFFFFFFF]
        for i in range(1, _N):
            prev = mt[-1]
            mt.append((6364136223846793005 * (prev ^ (prev >> 62)) + i) & 0xFFFFFFFFFFFFFFFF)
        self.mt = np.array(mt, dtype=np.uint64)
        self.buffer = np.empty(0, dtype=np.uint64)

    def _twist(self) -> None:
        mt = self.mt
        one = np.uint64(1)

        def step(i: slice, nxt: np.ndarray, far: np.ndarray) -> np.ndarray:
            y = (mt[i] & _UPPER) | (nxt & _LOWER)
            return far ^ (y >> one) ^ np.where((y & one) != 0, _MATRIX_A, np.uint64(0))

        mt[: _N - _M] = step(slice(0, _N - _M), mt[1 : _N - _M + 1], mt[_M:])  # all old values
        mt[_N - _M : _N - 1] = step(slice(_N - _M, _N - 1), mt[_N - _M + 1 :], mt[: _M - 1])  # new values below
        mt[_N - 1 :] = step(slice(_N - 1, _N), mt[:1], mt[_M - 1 : _M])
        y = mt.copy()
        y ^= (y >> np.uint64(29)) & np.uint64(0x5555555555555555)
        y ^= (y << np.uint64(17)) & np.uint64(0x71D67FFFEDA60000)
        y ^= (y << np.uint64(37)) & np.uint64(0xFFF7EEE000000000)
        y ^= y >> np.uint64(43)
        self.buffer = np.concatenate([self.buffer, y])

    def next(self, n: int) -> np.ndarray:
        while len(self.buffer) < n:
            self._twist()
        out, self.buffer = self.buffer[:n], self.buffer[n:]
        return out


def random_generator_trace(spec: DramSpec, requests: int) -> Trace:
    """DRAMSim3's RandomCPU as a trace of `requests` lines (one is accepted per cycle at most)."""
    draws = MersenneTwister64().next(2 * requests)
    addrs, kinds = draws[0::2], draws[1::2]
    mask = np.uint64(spec.capacity_bytes - 1)
    return Trace((addrs & mask).astype(np.int64), kinds % np.uint64(3) == 0, np.zeros(requests, dtype=np.int64),
                 False, "<dramsim3 -s random>", eof_quirks=False)  # fmt: skip


class StreamFrontend:
    """DRAMSim3's StreamCPU driving a MemorySystem, skipping cycles at which nothing can change."""

    def __init__(self, system: MemorySystem) -> None:
        self.system = system
        self.rng = MersenneTwister64()
        self.mask = system.spec.capacity_bytes - 1
        self.bases = [0, 0, 0]
        self.offset = 0
        self.inserted = [False, False, False]

    def _try(self, c: int) -> list[int]:
        """One StreamCPU tick at cycle c; returns the channels of the requests still waiting."""
        if self.offset >= STREAM_ARRAY_BYTES or c == 0:
            self.bases = [int(x) for x in self.rng.next(3)]
            self.offset = 0
        system, waiting = self.system, []
        for k, is_write in enumerate((False, False, True)):
            if self.inserted[k]:
                continue
            addr = (self.bases[k] + self.offset) & 0xFFFFFFFFFFFFFFFF & self.mask
            ctrl = system.channels[system.channel_of(addr)]
            if ctrl.will_accept(is_write):
                ctrl.add(Transaction(addr, is_write), c + 1)
                self.inserted[k] = True
            else:
                waiting.append(ctrl.channel)
        if all(self.inserted):
            self.offset += STREAM_STRIDE
            self.inserted = [False, False, False]
        return waiting

    def run(self, num_cycles: int, progress=None) -> None:
        """Simulate cycles [system.clk, num_cycles) (from a fresh system)."""
        system = self.system
        if system.clk != 0:
            raise MemsimError("the stream generator starts from a fresh memory system (clk 0)")
        channels = system.channels
        c, next_report = 0, 0
        while c < num_cycles:
            for ctrl in channels:
                if ctrl.next_wake <= c:
                    ctrl.tick(c)
            waiting = self._try(c)
            nxt = c + 1 if not waiting else min(channels[ch].next_wake for ch in waiting)
            nxt = min([nxt] + [ctrl.next_wake for ctrl in channels])
            # a new array base is drawn at the first cycle the offset has run past the end, not later
            c = max(nxt, c + 1)
            if progress is not None and c >= next_report:
                progress(min(c, num_cycles))
                next_report = c + 100_000
        system.clk = num_cycles


def run_generator(system: MemorySystem, kind: str, num_cycles: int, progress=None, engine: str = "auto") -> None:
    """Drive a fresh system for `num_cycles` with DRAMSim3's `-s random` or `-s stream` traffic."""
    if kind == "random":
        TraceFrontend(system, random_generator_trace(system.spec, num_cycles)).run(num_cycles, progress, engine)
    elif kind == "stream":
        StreamFrontend(system).run(num_cycles, progress)
    else:
        raise MemsimError(f"generator {kind!r}; allowed: {', '.join(GENERATORS)}")
