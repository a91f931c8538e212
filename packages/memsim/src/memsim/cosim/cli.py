"""`zaya memsim cosim ...`: memsim in RTL flows.

- `simdram CONFIG -o DIR`: the SimDRAM drop-in for a Chipyard Verilator harness (library + config file).
- `axi-check`: memsim's AXI4 port (cocotb) serving random bursts of the packaged Verilog master, checked;
  `--memory rtl`: the same bursts on memsim's generated RTL behind its AXI4 top (`memsim.rtl.axi_check`).
- `simdram-check`: the SimDRAM test bench (Verilator, DPI) running the self-checking DMA on memsim.

Light at import: cocotb, numpy and the builds load inside the commands.
"""

from pathlib import Path

import typer
from rich.console import Console
from rich.table import Table
from zaya_config.cli_errors import fail, reports

from memsim.cli_common import MODE, STRICT, config_notices
from memsim.errors import MemsimError

app = typer.Typer(help="memsim in RTL simulations: AXI4 port (cocotb), SimDRAM drop-in (DPI).", no_args_is_help=True)


def _status(text: str):
    return Console(stderr=True).status(text)


@app.command("simdram")
@reports(MemsimError)
def simdram(
    config: str = typer.Argument(..., help="memsim part: preset name (zaya memsim configs) or DRAMSim3 .ini"),
    out: Path = typer.Option(Path("memsim_simdram"), "--out", "-o", help="Folder for the library and config"),
    mode: str | None = MODE,
    strict: bool = STRICT,
) -> None:
    """Build libmemsim_simdram.so (SimDRAM's memory_init / memory_tick on memsim) and CONFIG's memsim.cfg."""
    from memsim.cosim.native_build import build_library
    from memsim.cosim.native_config import write_native_config

    with config_notices():
        cfg = write_native_config(config, out.resolve() / "memsim.cfg", mode=mode, strict=strict)
    with _status("compiling libmemsim_simdram.so"):
        lib = build_library("simdram", out.resolve())
    console = Console()
    console.print(f"wrote {lib}\nwrote {cfg}", highlight=False)
    console.print("Link it into the Verilator harness instead of SimDRAM.cc and DRAMSim:\n"
                  f"  -LDFLAGS \"-L{lib.parent} -lmemsim_simdram -Wl,-rpath,{lib.parent}\"\n"
                  f"and run the simulator with +memsim_config={cfg} (or MEMSIM_CONFIG_FILE={cfg}).",
                  highlight=False)  # fmt: skip


@app.command("axi-check")
@reports(MemsimError)
def axi_check(
    simulator: str | None = typer.Option(
        None, help="icarus or verilator (default: icarus; --memory rtl runs under verilator only)"
    ),
    bursts: int = typer.Option(2000, help="Random bursts the master issues"),
    data_bits: int = typer.Option(64, help="AXI data width: 32 to 512"),
    config: str = typer.Option("ddr4_8gb_x8_3200", help="memsim part"),
    ratio: str = typer.Option("1", help="Design clock : memory clock, e.g. 3/2"),
    stall: int = typer.Option(20, help="Percent of cycles each side holds back a valid or ready"),
    seed: int = typer.Option(1, help="Seed of the traffic"),
    out: Path = typer.Option(Path("memsim_axi_check"), "--out", "-o", help="Build and run folder"),
    memory: str = typer.Option("memsim", help="memsim (Python engine, cocotb port) or rtl (generated RTL, Verilator)"),
) -> None:
    """Serve random AXI4 bursts of the packaged Verilog master with memsim; check data and protocol."""
    if memory not in ("memsim", "rtl"):
        fail(ValueError(f"--memory {memory}: choose memsim or rtl"))
    if simulator not in (None, "icarus", "verilator"):
        fail(ValueError(f"--simulator {simulator}: choose icarus or verilator"))
    if memory == "rtl":
        if simulator == "icarus":
            fail(ValueError("--simulator icarus: --memory rtl runs the generated RTL under Verilator only; "
                            "drop --simulator or pass --simulator verilator"))  # fmt: skip
        _axi_check_rtl(config, data_bits, bursts, stall, seed, ratio, out)
        return
    simulator = simulator or "icarus"
    from memsim.cosim.axi_runs import MasterRun, simulate
    from memsim.cosim.simulators import build_once
    from memsim.cosim.testbench_top import write_axi_test_top

    if data_bits not in (32, 64, 128, 256, 512):
        fail(ValueError(f"--data-bits {data_bits}: choose 32, 64, 128, 256 or 512"))
    out = out.resolve()
    run = MasterRun("m", data_bits, bursts, seed=seed, config=config, ratio=ratio, stall=stall)
    run.clocks()
    sources = write_axi_test_top(out / "hdl", {"m": data_bits}, {}, id_bits=4)
    with _status(f"building the test top with {simulator}"):
        runner = build_once(simulator, out / simulator, sources, "axi_test_top")
    with _status(f"simulating {bursts} bursts"):
        checked = simulate(runner, out / simulator / "build", [run], out / "run", log_file=out / "run" / "sim.log")
    summary, record = checked["m"]
    table = Table("simulator", "bursts", "design cycles", "wall s", "design cycles/s", "result")
    table.add_row(simulator, str(bursts), f"{summary.last_cycle:,}", f"{record['wall_s']:.1f}",
                  f"{summary.last_cycle / record['wall_s']:,.0f}", "data and protocol OK")  # fmt: skip
    Console().print(table)


def _axi_check_rtl(config: str, data_bits: int, bursts: int, stall: int, seed: int, ratio: str, out: Path) -> None:
    from memsim.rtl.axi_check import run_axi_check

    if ratio != "1":
        fail(ValueError(f"--ratio {ratio}: the generated RTL runs at the memory clock; --memory rtl takes ratio 1"))
    out = out.resolve()
    with _status(f"building {config}'s RTL with its AXI4 top (Verilator, cached) and simulating {bursts} bursts"):
        (result,) = run_axi_check(config, (data_bits,), bursts, seed, folder=out / "rtl", build_root=out / "build",
                                  stall=stall)  # fmt: skip
    table = Table("memory", "data bits", "bursts (with the image)", "cycles", "DRAM commands", "result")
    verdict = "data and protocol OK" if not result.violations else f"{len(result.violations)} DRAM protocol violations"
    table.add_row("rtl", str(data_bits), str(result.bursts), f"{result.summary.last_cycle:,}", f"{result.commands:,}",
                  verdict)  # fmt: skip
    Console().print(table)
    for line in result.violations[:20]:
        Console().print(f"protocol: {line}", highlight=False)
    if result.violations:
        raise typer.Exit(code=1)


@app.command("simdram-check")
@reports(MemsimError)
def simdram_check(
    config: str = typer.Argument("ddr4_8gb_x8_3200", help="memsim part"),
    kib: int = typer.Option(64, help="KiB the DMA fills, copies and checks"),
    simdram_v: Path | None = typer.Option(None, help="Build with this SimDRAM.v (testchipip's) instead of memsim's"),
    out: Path = typer.Option(Path("memsim_simdram_check"), "--out", "-o", help="Build and run folder"),
) -> None:
    """Run the SimDRAM test bench (Verilator, libmemsim_simdram.so) on CONFIG; exit 1 if the DMA saw bad data."""
    from memsim.cosim.simdram_harness import HarnessParams, build_harness, run_harness

    out = out.resolve()
    with _status("building the SimDRAM test bench (Verilator)"):
        exe = build_harness(out / "build", HarnessParams(simdram_v=simdram_v))
    with _status(f"running the DMA on {config}"):
        result = run_harness(exe, config, out / "run", dma_bytes=kib * 1024)
    table = Table("part", "KiB", "design cycles", "wall s", "design cycles/s", "bad beats")
    table.add_row(config, str(kib), f"{result['cycles']:,}", f"{result['wall_s']:.3f}",
                  f"{result['cycles_per_s']:,.0f}", str(result["errors"]))  # fmt: skip
    Console().print(table)
    if result["errors"] or not result["done"]:
        raise typer.Exit(code=1)
