"""Random AXI4 traffic with its expected results, for `hdl/axi_burst_master.v`, and the check of what came back.

`random_traffic` draws bursts (INCR / WRAP / FIXED, 1-256 beats, narrow sizes, unaligned starts, several
IDs, random strobes) inside a window, and marks a burst as a barrier (the master waits until nothing is
outstanding) when it overlaps a write issued since the last barrier, or is a write overlapping any burst
since then, so that each read's data is determined by file order. `expected_reads` replays the traffic on a byte-dict model. `check_log` reads the master's log
and checks data and protocol: R beats of one ID in AR order with RLAST on the last beat only, B of one ID
in AW order, no response without a burst, OKAY responses, read data equal to the model on every lane the
beat uses.
"""

import random
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path

from memsim.cosim.axi_burst import AxiBurst, AxiProtocolError, BurstType, lane_mask

DESC_ADDR_BITS = 32


@dataclass
class TrafficBurst:
    """A burst of the master's list; `wbeats` are (data, strobe) per beat for writes."""

    burst: AxiBurst
    is_write: bool
    barrier: bool = False
    wbeats: list[tuple[int, int]] = field(default_factory=list)

    def descriptor(self) -> int:
        b = self.burst
        return (b.addr | (b.length - 1) << 32 | b.size << 40 | int(b.burst) << 43 | b.id << 45
                | int(self.is_write) << 53 | int(self.barrier) << 54)  # fmt: skip


def _length(rng: random.Random) -> int:
    """Mostly short bursts, some long ones, and every length 1..256 possible."""
    pick = rng.random()
    if pick < 0.5:
        return rng.randint(1, 4)
    if pick < 0.8:
        return rng.randint(5, 16)
    if pick < 0.95:
        return rng.randint(17, 64)
    return rng.randint(65, 256)


KIND_WEIGHTS = {BurstType.INCR: 0.7, BurstType.WRAP: 0.15, BurstType.FIXED: 0.15}


def _random_burst(rng: random.Random, data_bytes: int, ids: int, base: int, span: int,
                  kinds: tuple[BurstType, ...]) -> AxiBurst:  # fmt: skip
    max_size = (data_bytes - 1).bit_length()
    size = max_size if rng.random() < 0.6 else rng.randint(0, max_size)
    nb = 1 << size
    kind = rng.choices(kinds, [KIND_WEIGHTS[k] for k in kinds])[0]
    ident = rng.randrange(ids)
    if kind == BurstType.WRAP:
        length = rng.choice((2, 4, 8, 16))
        addr = base + rng.randrange(span // nb) * nb
        return AxiBurst(ident, addr, length, size, kind)
    if kind == BurstType.FIXED:
        length = rng.randint(1, 16)
        addr = base + rng.randrange(span - nb)
        return AxiBurst(ident, addr, length, size, kind)
    length = min(_length(rng), 4096 // nb)
    page = base + rng.randrange(span // 4096) * 4096
    room = 4096 - length * nb  # where an aligned start keeps the burst inside the 4 KB page
    start = rng.randrange(room // nb + 1) * nb
    if rng.random() < 0.3:
        start += rng.randrange(nb)  # unaligned start: the first beat uses fewer lanes
    return AxiBurst(ident, page + start, length, size, kind)


def _byte_span(b: AxiBurst, data_bytes: int) -> set[int]:
    return {a for beat in b.beats(data_bytes) for a in beat.byte_addrs(data_bytes)}


def random_traffic(seed: int, count: int, data_bytes: int, id_bits: int = 2, base: int = 0x10000,
                   span: int = 1 << 16, kinds: tuple[BurstType, ...] = tuple(KIND_WEIGHTS)) -> list[TrafficBurst]:  # fmt: skip
    """`count` random bursts of `kinds` inside [base, base + span); span a multiple of 4 KB."""
    rng = random.Random(seed)
    out: list[TrafficBurst] = []
    since_barrier: list[tuple[bool, set[int]]] = []
    full = (1 << data_bytes) - 1
    for _ in range(count):
        burst = _random_burst(rng, data_bytes, 1 << id_bits, base, span, kinds)
        is_write = rng.random() < 0.5
        touched = _byte_span(burst, data_bytes)
        barrier = any((w or is_write) and not touched.isdisjoint(other) for w, other in since_barrier)
        item = TrafficBurst(burst, is_write, barrier)
        if is_write:
            for beat in burst.beats(data_bytes):
                strobe = full if rng.random() < 0.7 else rng.getrandbits(data_bytes)
                item.wbeats.append((rng.getrandbits(8 * data_bytes), strobe & lane_mask(beat)))
        if barrier:
            since_barrier.clear()
        since_barrier.append((is_write, touched))
        out.append(item)
    return out


def initial_image(seed: int, base: int, span: int) -> bytes:
    """Random memory contents for [base, base + span) before the traffic runs."""
    return random.Random(seed ^ 0x5EED).randbytes(span)


def expected_reads(traffic: list[TrafficBurst], data_bytes: int, memory: dict[int, int]) -> dict[int, list[int]]:
    """Burst index -> expected data word per beat (lanes the beat does not use are zero); updates `memory`."""
    out: dict[int, list[int]] = {}
    for k, item in enumerate(traffic):
        beats = item.burst.beats(data_bytes)
        if item.is_write:
            for beat, (data, strobe) in zip(beats, item.wbeats, strict=True):
                for lane, addr in zip(range(beat.lane_lo, beat.lane_hi + 1), beat.byte_addrs(data_bytes), strict=True):
                    if strobe >> lane & 1:
                        memory[addr] = data >> (8 * lane) & 0xFF
            continue
        words = []
        for beat in beats:
            word = 0
            for lane, addr in zip(range(beat.lane_lo, beat.lane_hi + 1), beat.byte_addrs(data_bytes), strict=True):
                word |= memory.get(addr, 0) << (8 * lane)
            words.append(word)
        out[k] = words
    return out


def write_master_files(traffic: list[TrafficBurst], data_bytes: int, folder: Path) -> list[str]:
    """Write the master's +desc and +wbeats files; return its plusargs (without +log)."""
    folder.mkdir(parents=True, exist_ok=True)
    desc, wbeats = folder / "desc.hex", folder / "wbeats.hex"
    desc.write_text("".join(f"{t.descriptor():016x}\n" for t in traffic))
    digits = (9 * data_bytes + 3) // 4
    beats = [strobe << (8 * data_bytes) | data for t in traffic for data, strobe in t.wbeats]
    wbeats.write_text("".join(f"{word:0{digits}x}\n" for word in beats))
    return [f"+desc={desc}", f"+wbeats={wbeats}", f"+ndesc={len(traffic)}", f"+nbeats={len(beats)}"]


@dataclass
class LogSummary:
    """What the master saw: per burst, the cycle of its address handshake and of each response."""

    address_cycle: dict[int, int] = field(default_factory=dict)
    response_cycles: dict[int, list[int]] = field(default_factory=dict)
    last_cycle: int = 0


def check_log(log: Path, traffic: list[TrafficBurst], data_bytes: int, expected: dict[int, list[int]]) -> LogSummary:
    """Check the master's log against the traffic and the model; raise AxiProtocolError on the first error."""
    summary = LogSummary()
    reads: dict[int, deque[int]] = {}
    writes: dict[int, deque[int]] = {}
    beat_of: dict[int, int] = {}
    beats_of: dict[int, list] = {}
    for n, line in enumerate(log.read_text().splitlines(), 1):
        kind, *f = line.split()
        where = f"{log.name}:{n} ({line[:60]})"
        if kind in ("AR", "AW"):
            k, cycle = int(f[0]), int(f[1])
            b = traffic[k].burst
            if traffic[k].is_write != (kind == "AW"):
                raise AxiProtocolError(f"{where}: burst {k} went out on the wrong channel")
            (writes if kind == "AW" else reads).setdefault(b.id, deque()).append(k)
            summary.address_cycle[k] = cycle
        elif kind == "R":
            rid, data, last, resp, cycle = int(f[0]), int(f[1], 16), int(f[2]), int(f[3]), int(f[4])
            queue = reads.get(rid)
            if not queue:
                raise AxiProtocolError(f"{where}: R beat for id {rid} with no read burst outstanding")
            k = queue[0]
            i = beat_of.get(k, 0)
            beats = beats_of.get(k) or beats_of.setdefault(k, traffic[k].burst.beats(data_bytes))
            want = expected[k][i]
            if resp != 0:
                raise AxiProtocolError(f"{where}: RRESP = {resp}, expected OKAY")
            if data & lane_mask_bits(beats[i]) != want:
                raise AxiProtocolError(f"{where}: burst {k} beat {i}: data {data:x} differs from the model {want:x}")
            if last != (i == len(beats) - 1):
                raise AxiProtocolError(f"{where}: burst {k} beat {i} of {len(beats)}: RLAST = {last}")
            beat_of[k] = i + 1
            summary.response_cycles.setdefault(k, []).append(cycle)
            if last:
                queue.popleft()
        elif kind == "B":
            bid, resp, cycle = int(f[0]), int(f[1]), int(f[2])
            queue = writes.get(bid)
            if not queue:
                raise AxiProtocolError(f"{where}: B for id {bid} with no write burst outstanding")
            if resp != 0:
                raise AxiProtocolError(f"{where}: BRESP = {resp}, expected OKAY")
            summary.response_cycles[queue.popleft()] = [cycle]
        else:
            raise AxiProtocolError(f"{where}: unknown log line")
        summary.last_cycle = max(summary.last_cycle, int(f[-1]))
    missing = [k for k in range(len(traffic)) if k not in summary.response_cycles]
    if missing:
        raise AxiProtocolError(f"{len(missing)} bursts never completed (first: {missing[0]})")
    return summary


def lane_mask_bits(beat) -> int:
    """The data bits of the beat's byte lanes."""
    mask = 0
    for lane in range(beat.lane_lo, beat.lane_hi + 1):
        mask |= 0xFF << (8 * lane)
    return mask
