"""The SimDRAM drop-in's AXI slave (C++, on the native engine), driven from Python edge by edge: random INCR
bursts (narrow, unaligned, strobed, several IDs, backpressure) match a byte model with AXI's ordering, the
unloaded read latency follows the clock-domain formula, and bad bursts are named."""

import shutil
from pathlib import Path

import pytest
from memsim.cosim.axi_burst import BurstType
from memsim.cosim.axi_traffic import check_log, expected_reads, initial_image, random_traffic
from memsim.errors import MemsimError

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="no C++ compiler: apt-get install -y g++")
BASE, SPAN = 0x8001_0000, 1 << 16


@pytest.fixture(scope="module")
def native_dir(tmp_path_factory):
    from memsim.cosim.native_build import build_library

    folder = tmp_path_factory.getbasetemp().parent / "memsim-native"
    build_library("native", folder)
    return folder


def _slave(native_dir: Path, data_bytes: int, config: str = "ddr4_8gb_x8_3200", clock_hz: int = 1_000_000_000,
           log: Path | None = None):  # fmt: skip
    from memsim.cosim.native_axi import NativeAxiSlave

    return NativeAxiSlave(config, 0x8000_0000, 1 << 24, data_bytes, clock_hz, log=log, build_dir=native_dir)


@pytest.mark.parametrize(("data_bytes", "count"), [(8, 2000), (4, 300), (32, 300)])
def test_random_incr_bursts_match_the_byte_model(native_dir: Path, tmp_path: Path, data_bytes: int, count: int) -> None:
    from memsim.cosim.native_axi import replay

    traffic = random_traffic(7 + data_bytes, count, data_bytes, id_bits=2, base=BASE, span=SPAN,
                             kinds=(BurstType.INCR,))  # fmt: skip
    slave = _slave(native_dir, data_bytes)
    image = initial_image(1, BASE, SPAN)
    slave.poke(BASE, image)
    replay(slave, traffic, tmp_path / "master.log", stall=20, seed=3)
    expected = expected_reads(traffic, data_bytes, {BASE + i: b for i, b in enumerate(image)})
    summary = check_log(tmp_path / "master.log", traffic, data_bytes, expected)
    assert len(summary.response_cycles) == count
    assert any(t.burst.size < (data_bytes - 1).bit_length() for t in traffic)  # narrow bursts were in it


@pytest.mark.parametrize("clock_hz", [1_000_000_000, 1_500_000_000, 500_000_000, 700_000_000])
def test_unloaded_read_latency_follows_the_clock_formula(native_dir: Path, tmp_path: Path, clock_hz: int) -> None:
    """HBM2 (tCK = 1 ns) under a 1:1, 3:2, 1:2 and 7:10 design clock; every read alone."""
    from memsim.cosim.axi_port import PORT_CYCLES
    from memsim.cosim.clock_domains import ClockDomains
    from memsim.cosim.native_axi import replay

    traffic = random_traffic(11, 80, 8, base=BASE, span=SPAN, kinds=(BurstType.INCR,))
    for item in traffic:
        item.barrier = True
    slave = _slave(native_dir, 8, "hbm2_8gb_x128", clock_hz, log=tmp_path / "requests.log")
    replay(slave, traffic, tmp_path / "master.log", seed=5)
    slave.close()
    added = {}  # add edge -> memsim latency of the first line entering then
    starts = {}
    for line in (tmp_path / "requests.log").read_text().splitlines():
        f = line.split()
        if f[0] == "A":
            starts[f[1]] = (int(f[5]), int(f[4]))
        else:
            edge, add_mem = starts[f[1]]
            added.setdefault(edge, int(f[2]) - add_mem)
    summary = check_log(tmp_path / "master.log", traffic, 8, expected_reads(traffic, 8, {}))
    clocks = ClockDomains.from_mhz(1.0, clock_hz / 1e6)
    reads = [k for k, t in enumerate(traffic) if not t.is_write]
    latencies = set()
    for k in reads:
        ar = summary.address_cycle[k]
        memsim_cycles = added[ar]
        assert summary.response_cycles[k][0] - ar == clocks.design_cycles(memsim_cycles) + PORT_CYCLES, k
        latencies.add(memsim_cycles)
    assert len(latencies) > 1


def test_bad_bursts_are_named(native_dir: Path) -> None:
    slave = _slave(native_dir, 8)
    idle = [0] * 16
    slave.tick(idle, bytes(8))  # ready rises
    with pytest.raises(MemsimError, match="4 KB boundary"):
        slave.tick([0, 1, 0x8000_0FF8, 0, 3, 1, *idle[6:]], bytes(8))
    slave = _slave(native_dir, 8)
    slave.tick(idle, bytes(8))
    with pytest.raises(MemsimError, match="outside memory"):
        slave.tick([0, 1, 0x1000, 0, 3, 0, *idle[6:]], bytes(8))
    with pytest.raises(MemsimError, match=r"word_size 64 must be a power of two of 1\.\.32"):
        _slave(native_dir, 64)
