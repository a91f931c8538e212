"""`zaya memsim ...`: run a trace, list the shipped standards, audit the protocol.

Light at import: numpy and the simulator load inside the commands.
"""

from pathlib import Path

import typer
from rich.console import Console
from rich.table import Table

from memsim.cosim.cli import app as cosim_app

app = typer.Typer(help="memsim: cycle-accurate DRAM simulation with DRAMSim3-compatible stats.", no_args_is_help=True)
app.add_typer(cosim_app, name="cosim")


def _console() -> Console:
    return Console()  # made per command, so the terminal width is read when the command runs


def _fail(err: Exception) -> None:
    Console(stderr=True).print(f"[bold red]error:[/] {err}", markup=True, highlight=False, soft_wrap=True)
    raise typer.Exit(code=2)


@app.command("run")
def run(
    config: str = typer.Argument(..., help="DRAMSim3 .ini file or preset name (see `zaya memsim configs`)"),
    trace: Path = typer.Argument(..., help="Trace in DRAMSim3's format: '0xADDR READ|WRITE CYCLE' per line"),
    cycles: int = typer.Option(100_000, "--cycles", "-c", help="Cycles to simulate (DRAMSim3's -c)"),
    out: Path = typer.Option(Path("memsim_out"), "--out", "-o", help="Output folder for stats.json"),
    plots: bool = typer.Option(True, help="Also write read_latency.png"),
) -> None:
    """Simulate TRACE on CONFIG for N cycles; write OUT/stats.json with DRAMSim3's stat names."""
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    from memsim.errors import MemsimError
    from memsim.memory_system import MemorySystem
    from memsim.results import write_run
    from memsim.trace import TraceFrontend, read_trace

    if cycles <= 0:
        _fail(ValueError(f"--cycles {cycles}: give a positive number of cycles"))
    try:
        system = MemorySystem(config, functional=False)
        frontend = TraceFrontend(system, read_trace(trace))
    except MemsimError as err:
        _fail(err)
    with Progress(TextColumn("simulating"), BarColumn(), TextColumn("{task.completed:,}/{task.total:,} cycles"),
                  TimeElapsedColumn(), console=Console(stderr=True), transient=True) as progress:  # fmt: skip
        task = progress.add_task("run", total=cycles)
        frontend.run(cycles, progress=lambda c: progress.update(task, completed=c))
    stats = write_run(system, cycles, out, plots=plots)
    table = Table("channel", "reads", "writes", "avg read latency", "bandwidth GB/s", "row hits", "power mW")
    for ch, s in stats.items():
        table.add_row(ch, str(s["num_reads_done"]), str(s["num_writes_done"]), f"{s['average_read_latency']:.1f}",
                      f"{s['average_bandwidth']:.2f}", str(s["num_read_row_hits"]), f"{s['average_power']:.1f}")  # fmt: skip
    _console().print(table)
    _console().print(f"wrote {out / 'stats.json'}")


@app.command("configs")
def configs() -> None:
    """Table of the shipped standards (presets usable as CONFIG and as Hydra `memsim=<name>`)."""
    from memsim.presets import preset_names
    from memsim.spec import load_spec

    table = Table()
    table.add_column("name", no_wrap=True)
    for header in ("protocol", "channels", "ranks", "banks", "request B", "capacity GiB", "tCK ns", "peak GB/s"):
        table.add_column(header)
    for name in preset_names():
        s = load_spec(name)
        peak = s.channels * s.request_size_bytes / (s.burst_cycle * s.tCK_ns)
        table.add_row(name, s.protocol, str(s.channels), str(s.ranks), str(s.banks), str(s.request_size_bytes),
                      f"{s.capacity_bytes / 2**30:g}", f"{s.tCK_ns:g}", f"{peak:.1f}")  # fmt: skip
    _console().print(table)


@app.command("check")
def check(
    config: str = typer.Argument("ddr4_8gb_x8_3200", help="DRAMSim3 .ini file or preset name"),
    trace: Path | None = typer.Argument(None, help="Trace to run; default: seeded random traffic"),
    cycles: int = typer.Option(50_000, "--cycles", "-c", help="Cycles to simulate"),
    requests: int = typer.Option(5_000, help="Random requests when no trace is given"),
    seed: int = typer.Option(0, help="Seed of the random traffic"),
) -> None:
    """Run the independent protocol checker over every command issued; exit 1 on any violation."""
    from memsim.checker import check_commands
    from memsim.errors import MemsimError
    from memsim.fuzz import random_trace
    from memsim.memory_system import MemorySystem
    from memsim.trace import TraceFrontend, read_trace

    try:
        system = MemorySystem(config, functional=False)
        tr = read_trace(trace) if trace else random_trace(system.spec, requests, seed=seed)
    except MemsimError as err:
        _fail(err)
    TraceFrontend(system, tr).run(cycles)
    commands = system.issued_commands()
    violations = check_commands(system.spec, commands, cycles)
    console = _console()
    for v in violations[:20]:
        console.print(f"[red]violation[/] {v}", highlight=False)
    console.print(f"{len(commands):,} commands checked against {system.spec.name}: {len(violations)} violations")
    if violations:
        raise typer.Exit(code=1)
