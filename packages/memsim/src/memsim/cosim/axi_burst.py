"""AXI4 burst arithmetic (AMBA AXI spec, A3.4): beat addresses, byte lanes and the memory lines a burst touches.

A burst is what one AR or AW handshake carries. `AxiBurst.beats(data_bytes)` gives, per beat, the beat's
address and the byte lanes it uses on a bus of `data_bytes` bytes: INCR counts up from the start
(the first beat of an unaligned start uses only the lanes from the start to the next size boundary),
WRAP counts up and wraps at the burst-size-aligned boundary, FIXED repeats the first beat. Narrow
transfers (2**size < bus bytes) use the lanes of their address within the bus word.
`check(data_bytes)` enforces AXI4's rules, so a master that breaks them gets a named error instead of
a silently wrong answer.
"""

from dataclasses import dataclass
from enum import IntEnum
from typing import NamedTuple

from memsim.errors import MemsimError

BOUNDARY_4K = 4096


class BurstType(IntEnum):
    FIXED = 0
    INCR = 1
    WRAP = 2


class AxiProtocolError(MemsimError):
    """A master broke an AXI4 rule (illegal burst, response without a request, ...)."""


class Beat(NamedTuple):
    """One data transfer: its byte address, and the first and last byte lane it uses (inclusive)."""

    addr: int
    lane_lo: int
    lane_hi: int

    def byte_addrs(self, data_bytes: int) -> range:
        """The memory bytes this beat carries, in lane order."""
        base = self.addr - self.addr % data_bytes
        return range(base + self.lane_lo, base + self.lane_hi + 1)


@dataclass(frozen=True)
class AxiBurst:
    """One AXI4 address-channel request: `length` is beats (AxLEN + 1), `size` is log2(bytes per beat)."""

    id: int
    addr: int
    length: int
    size: int
    burst: BurstType = BurstType.INCR

    @property
    def beat_bytes(self) -> int:
        return 1 << self.size

    def check(self, data_bytes: int) -> None:
        """Raise AxiProtocolError naming the broken rule (AXI4, A3.4.1)."""
        where = f"burst id={self.id} addr={self.addr:#x} len={self.length} size={self.size} {self.burst.name}"
        if not 1 <= self.length <= 256:
            raise AxiProtocolError(f"{where}: AxLEN+1 must be 1..256")
        if self.beat_bytes > data_bytes:
            raise AxiProtocolError(f"{where}: 2**AxSIZE = {self.beat_bytes} bytes exceeds the {data_bytes}-byte bus")
        if self.burst == BurstType.WRAP:
            if self.length not in (2, 4, 8, 16):
                raise AxiProtocolError(f"{where}: a WRAP burst has 2, 4, 8 or 16 beats")
            if self.addr % self.beat_bytes:
                raise AxiProtocolError(f"{where}: a WRAP burst starts at a {self.beat_bytes}-byte aligned address")
        elif self.burst == BurstType.FIXED:
            if self.length > 16:
                raise AxiProtocolError(f"{where}: a FIXED burst has at most 16 beats")
        else:
            last = self.addr - self.addr % self.beat_bytes + self.length * self.beat_bytes - 1
            if self.addr // BOUNDARY_4K != last // BOUNDARY_4K:
                raise AxiProtocolError(f"{where}: an INCR burst must not cross a 4 KB boundary")

    def beats(self, data_bytes: int) -> list[Beat]:
        """Every beat's address and byte lanes on a `data_bytes`-byte bus."""
        nb = self.beat_bytes
        aligned = self.addr - self.addr % nb
        out = []
        if self.burst == BurstType.WRAP:
            span = nb * self.length
            lower = self.addr - self.addr % span
            addrs = [lower + (aligned - lower + i * nb) % span for i in range(self.length)]
        elif self.burst == BurstType.FIXED:
            addrs = [self.addr] * self.length
        else:
            addrs = [self.addr] + [aligned + i * nb for i in range(1, self.length)]
        for i, a in enumerate(addrs):
            lo = a % data_bytes
            if i == 0 or self.burst == BurstType.FIXED:
                hi = (aligned % data_bytes) + nb - 1  # the first beat ends at the size boundary
            else:
                hi = lo + nb - 1
            out.append(Beat(a, lo, hi))
        return out

    def lines(self, data_bytes: int, line_bytes: int) -> list[int]:
        """The memory lines the burst touches, each once, in the order its beats first reach them."""
        seen: dict[int, None] = {}
        for beat in self.beats(data_bytes):
            for line in beat_lines(beat, data_bytes, line_bytes):
                seen.setdefault(line)
        return list(seen)


def beat_lines(beat: Beat, data_bytes: int, line_bytes: int) -> range:
    """Line addresses of the bytes one beat carries (one line unless the bus is wider than a line)."""
    span = beat.byte_addrs(data_bytes)
    first, last = span.start - span.start % line_bytes, span.stop - 1 - (span.stop - 1) % line_bytes
    return range(first, last + 1, line_bytes)


def lane_mask(beat: Beat) -> int:
    """The beat's byte lanes as a strobe-style bit mask."""
    return ((1 << (beat.lane_hi + 1)) - 1) & ~((1 << beat.lane_lo) - 1)
