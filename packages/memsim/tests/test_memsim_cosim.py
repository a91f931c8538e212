"""RTL co-simulation: the example DMA (Verilog, Icarus) copies real data through memsim under cocotb."""

import shutil

import pytest

pytest.importorskip("cocotb", reason="cocotb is not installed (pip install memsim[cosim])")
pytestmark = pytest.mark.skipif(
    shutil.which("iverilog") is None, reason="Icarus Verilog not found: apt-get install -y iverilog"
)


@pytest.mark.slow
@pytest.mark.parametrize(("config", "lines"), [("ddr4_8gb_x8_3200", 24), ("hbm2_8gb_x128", 16)])
def test_dma_copy_under_memsim(tmp_path, config: str, lines: int) -> None:
    from cocotb_tools.runner import get_results, get_runner
    from memsim.cosim import HDL_DIR

    runner = get_runner("icarus")
    runner.build(sources=[HDL_DIR / "dma_copy.v"], hdl_toplevel="dma_copy", build_dir=tmp_path / "build",
                 timescale=("1ns", "1ps"))  # fmt: skip
    results = runner.test(hdl_toplevel="dma_copy", test_module="memsim.cosim.dma_testbench",
                          build_dir=tmp_path / "build", test_dir=tmp_path / "test",
                          extra_env={"MEMSIM_CONFIG": config, "MEMSIM_LINES": str(lines)})  # fmt: skip
    total, failed = get_results(results)
    assert total == 1 and failed == 0, (tmp_path / "test").glob("*.log")
