"""Traces as users have them: 64-bit addresses (wrapped on request), Ramulator 2's formats, DRAMSim3's generators."""

from pathlib import Path

import numpy as np
import pytest
from memsim import MemorySystem, MemsimError, TraceFrontend, parse_trace_text, read_trace
from memsim.address_mapping import DramAddress
from memsim.generators import MersenneTwister64, StreamFrontend, random_generator_trace, run_generator
from memsim.trace import Trace, format_trace
from memsim.trace_formats import detect_format, parse_ramulator2_text


def test_64_bit_addresses_are_an_error_unless_wrapped(tmp_path: Path) -> None:
    text = "0xffff7f0000001040 READ 0\n0x7fffffffffff0080 WRITE 2\n0x40 READ 3\n"
    trace = parse_trace_text(text)
    assert trace.addrs.dtype == np.uint64 and int(trace.addrs[0]) == 0xFFFF7F0000001040
    with pytest.raises(MemsimError, match=r"beyond the memory's capacity .*wrap it as DRAMSim3 does \(--wrap"):
        TraceFrontend(MemorySystem("ddr4_8gb_x8_3200", functional=False), trace)
    system = MemorySystem("ddr4_8gb_x8_3200", functional=False, wrap=True)
    TraceFrontend(system, trace).run(2000)
    stats = system.stats()["0"]
    assert stats["num_reads_done"] == 3 and stats["num_writes_done"] == 1  # 2 reads, 1 write, DRAMSim3's extra read
    first = system.channels[0].commands[0]  # the ACT of the first read: its location is the address's low bits
    where = system.mapping.decode(0xFFFF7F0000001040 & ((1 << system.mapping.address_bits) - 1))
    assert first[4] == where.row
    with pytest.raises(MemsimError, match="more than 64 bits"):
        parse_trace_text("0x1" + "0" * 16 + " READ 0\n")


def test_wrapped_api_requests_alias_their_location() -> None:
    system = MemorySystem("ddr4_8gb_x8_3200", wrap=True)
    capacity = 1 << system.mapping.address_bits
    system.add_transaction(capacity + 0x40, True, bytes(range(64)))
    system.flush()
    assert system.peek(0x40) == bytes(range(64)) == system.peek(3 * capacity + 0x40)


def test_ramulator2_read_write_and_load_store_traces(tmp_path: Path) -> None:
    system = MemorySystem("ddr4_8gb_x8_3200", functional=False)
    spec, mapping = system.spec, system.mapping
    vectors = [(0, 1, 2, 3, 100, 5), (0, 0, 1, 1, 7, 0), (0, 1, 2, 3, 100, 6)]
    text = "".join(f"{'W' if i == 1 else 'R'} {','.join(map(str, v))}\n" for i, v in enumerate(vectors))
    path = tmp_path / "rw.trace"
    path.write_text(text)
    assert detect_format(text) == "ramulator2"
    trace = read_trace(path, spec=spec)
    assert [mapping.decode(int(a)) for a in trace.addrs] == [DramAddress(*v) for v in vectors]
    assert trace.is_write.tolist() == [False, True, False] and trace.cycles.tolist() == [0, 0, 0]
    TraceFrontend(system, trace).run(1000)
    assert system.stats()["0"]["num_reads_done"] == 2  # each line once: no DRAMSim3 end-of-file extra read
    assert system.stats()["0"]["num_read_row_hits"] == 1  # the third line hits the row the first one opened
    loads = parse_ramulator2_text("LD 0x12340\nST 4096\n")
    assert loads.addrs.tolist() == [0x12340, 4096] and loads.is_write.tolist() == [False, True]
    with pytest.raises(MemsimError, match="give the memory system it is for"):
        read_trace(path)
    with pytest.raises(MemsimError, match=r"rw\.trace:2: bad Ramulator 2 trace line 'R 0,1,2': 3 levels"):
        path.write_text("R 0,0,0,0,0,0\nR 0,1,2\n")
        read_trace(path, spec=spec)
    with pytest.raises(MemsimError, match="trace format 'pin'; allowed: auto, dramsim3, ramulator2"):
        read_trace(path, fmt="pin")


def test_ramulator2_hbm_vectors_name_the_pseudo_channel() -> None:
    system = MemorySystem("hbm3_16gb_pc", functional=False)
    trace = parse_ramulator2_text("R 3,1,2,1,50,4\n", system.spec)
    assert system.mapping.decode(int(trace.addrs[0])) == DramAddress(3 * 2 + 1, 0, 2, 1, 50, 4)


def test_mt19937_64_is_the_cpp_standard_generator() -> None:
    """The C++ standard fixes the 10000th output of a default-constructed std::mt19937_64."""
    assert int(MersenneTwister64().next(10_000)[-1]) == 9981545732273789042
    rng = MersenneTwister64()
    assert [int(x) for x in rng.next(1)] + [int(x) for x in rng.next(320)][:1] == [14514284786278117030,
                                                                                  4620546740167642908]  # fmt: skip


def test_dramsim3_generators_drive_a_system() -> None:
    spec = MemorySystem("ddr4_8gb_x8_3200", functional=False).spec
    trace = random_generator_trace(spec, 1000)
    assert int(trace.addrs.max()) < spec.capacity_bytes and 0.25 < trace.is_write.mean() < 0.42  # gen() % 3 == 0
    system = MemorySystem("hbm2_8gb_x128", functional=False)
    frontend = StreamFrontend(system)
    frontend.run(3000)
    stats = system.stats()
    reads, writes = (sum(s[k] for s in stats.values()) for k in ("num_reads_done", "num_writes_done"))
    assert reads > 2000 and abs(reads / 2 - writes) < 0.05 * writes  # two read streams and one write stream
    with pytest.raises(MemsimError, match="generator 'linear'; allowed: random, stream"):
        run_generator(MemorySystem("hbm2_8gb_x128", functional=False), "linear", 100)


def test_format_trace_round_trips() -> None:
    trace = Trace(np.array([0x40, 1 << 40]), np.array([False, True]), np.array([0, 9]), True)
    again = parse_trace_text(format_trace(trace))
    assert again.addrs.tolist() == [0x40, 1 << 40] and again.is_write.tolist() == [False, True]
    assert again.cycles.tolist() == [0, 9]
