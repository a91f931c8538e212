"""`zaya memsim ...`: run a trace, list the shipped standards and the config keys, audit the protocol.

Light at import: numpy and the simulator load inside the commands. Messages are printed with rich markup
escaped, so bracketed text ("missing from [timing]") reads as written.
"""

from pathlib import Path

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from zaya_config.cli_errors import fail, reports

from memsim.cli_common import MODE, STRICT, config_notices
from memsim.cosim.cli import app as cosim_app
from memsim.errors import MemsimError
from memsim.rtl.cli import rtl as rtl_command

app = typer.Typer(help="memsim: cycle-accurate DRAM simulation with DRAMSim3-compatible stats.", no_args_is_help=True)
app.add_typer(cosim_app, name="cosim")
app.command("rtl")(rtl_command)


def _console() -> Console:
    return Console()  # made per command, so the terminal width is read when the command runs


@app.command("run")
@reports(MemsimError)
def run(
    config: str = typer.Argument(..., help="DRAMSim3 .ini file or preset name (see `zaya memsim configs`)"),
    trace: Path | None = typer.Argument(
        None, help="Trace: DRAMSim3's '0xADDR READ|WRITE CYCLE' lines or Ramulator 2's"
    ),
    cycles: int = typer.Option(100_000, "--cycles", "-c", help="Cycles to simulate (DRAMSim3's -c)"),
    out: Path = typer.Option(Path("memsim_out"), "--out", "-o", help="Output folder for stats.json"),
    stream: str | None = typer.Option(None, "--stream", "-s", help="No trace: DRAMSim3's generator, random or stream"),
    trace_format: str = typer.Option("auto", "--trace-format", help="auto, dramsim3 or ramulator2"),
    wrap: bool = typer.Option(False, "--wrap", help="Wrap addresses beyond the capacity, as DRAMSim3 does"),
    plots: bool = typer.Option(True, help="Also write read_latency.png"),
    strict: bool = STRICT,
    mode: str | None = MODE,
) -> None:
    """Simulate TRACE (or DRAMSim3's -s generator) on CONFIG for N cycles; write OUT/stats.json (DRAMSim3's names)."""
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    from memsim.generators import GENERATORS, run_generator
    from memsim.memory_system import MemorySystem
    from memsim.results import write_run
    from memsim.trace import TraceFrontend, read_trace

    if cycles <= 0:
        fail(ValueError(f"--cycles {cycles}: give a positive number of cycles"))
    if (trace is None) == (stream is None):
        fail(ValueError("give a TRACE file or --stream random|stream (DRAMSim3's -s), not both and not neither"))
    if stream is not None and stream not in GENERATORS:
        fail(ValueError(f"--stream {stream}; allowed: {', '.join(GENERATORS)}"))
    with config_notices():
        system = MemorySystem(config, functional=False, mode=mode, strict=strict, wrap=wrap)
    frontend = TraceFrontend(system, read_trace(trace, trace_format, system.spec)) if trace else None
    with Progress(TextColumn("simulating"), BarColumn(), TextColumn("{task.completed:,}/{task.total:,} cycles"),
                  TimeElapsedColumn(), console=Console(stderr=True), transient=True) as progress:  # fmt: skip
        task = progress.add_task("run", total=cycles)
        report = lambda c: progress.update(task, completed=c)  # noqa: E731
        if frontend is not None:
            frontend.run(cycles, progress=report)
        else:
            run_generator(system, stream, cycles, progress=report)
    stats = write_run(system, cycles, out, plots=plots)
    table = Table("channel", "reads", "writes", "avg read latency", "bandwidth GB/s", "row hits", "power mW")
    for ch, s in stats.items():
        table.add_row(ch, str(s["num_reads_done"]), str(s["num_writes_done"]), f"{s['average_read_latency']:.1f}",
                      f"{s['average_bandwidth']:.2f}", str(s["num_read_row_hits"]), f"{s['average_power']:.1f}")  # fmt: skip
    _console().print(table)
    _console().print(f"wrote {out / 'stats.json'}")


@app.command("trace")
@reports(MemsimError)
def trace(
    config: str = typer.Argument(..., help="DRAMSim3 .ini file or preset name the trace is for"),
    out: Path = typer.Option(..., "--out", "-o", help="Trace file to write (DRAMSim3's format)"),
    kind: str = typer.Option("random", help="random (with a hot set) or stream (consecutive lines)"),
    requests: int = typer.Option(10_000, "--requests", "-n", help="Requests"),
    write_fraction: float = typer.Option(0.3, help="Fraction of writes"),
    max_gap: int = typer.Option(4, help="Cycles between requests are drawn from 0..max_gap"),
    seed: int = typer.Option(0, help="Seed"),
) -> None:
    """Write a seeded synthetic trace for CONFIG in DRAMSim3's format (runs in memsim and in DRAMSim3)."""
    from zaya_config.atomic import write_text_atomic

    from memsim.fuzz import random_trace, stream_trace
    from memsim.spec import load_spec
    from memsim.trace import format_trace

    makers = {"random": random_trace, "stream": stream_trace}
    if kind not in makers or requests <= 0 or not 0 <= write_fraction <= 1 or max_gap < 0:
        fail(ValueError(f"--kind {kind} (random or stream), -n {requests} (> 0), --write-fraction {write_fraction} "
                         f"(0..1), --max-gap {max_gap} (>= 0): one of these is out of range"))  # fmt: skip
    with config_notices():
        spec = load_spec(config)
    tr = makers[kind](spec, requests, seed=seed, write_fraction=write_fraction, max_gap=max_gap)
    write_text_atomic(out, format_trace(tr))
    _console().print(f"wrote {out}: {requests:,} requests over {int(tr.cycles[-1]) + 1:,} cycles")


@app.command("configs")
@reports(MemsimError)
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


@app.command("build-engine")
def build_engine() -> None:
    """Build memsim's C++ engine now with the system's compiler (g++, or $CXX), as `make setup` does; without a
    compiler say so in one line and exit 0: trace runs then use the Python engine."""
    from memsim.compiled.library import prebuild

    built, line = prebuild()
    typer.echo(line, err=not built)


@app.command("ini")
@reports(MemsimError)
def ini(preset: str = typer.Argument(..., help="Preset name (see `zaya memsim configs`)")) -> None:
    """Print a preset as a DRAMSim3 .ini file (to run it in DRAMSim3, or to edit and run it here)."""
    from memsim.ini_file import format_ini
    from memsim.presets import preset_sections

    typer.echo(format_ini(preset_sections(preset)), nl=False)


@app.command("keys")
@reports(MemsimError)
def keys(section: str | None = typer.Argument(None, help="Only this section, e.g. system")) -> None:
    """Every config key memsim reads, with DRAMSim3's default and what is allowed."""
    from memsim.config_keys import KEYS, NOT_MODELLED

    sections = [section] if section else list(KEYS)
    for name in sections:
        if name not in KEYS:
            fail(ValueError(f"no section [{name}]; sections: {', '.join(KEYS)}"))
        table = Table(title=escape(f"[{name}]"), title_justify="left")
        for header in ("key", "type", "default", "allowed", "meaning"):
            table.add_column(header)
        for key in KEYS[name].values():
            allowed = ", ".join(key.choices) if key.choices else ""
            table.add_row(key.name, key.kind, escape(str(key.default)), allowed,
                          escape(key.doc + (" (memsim only)" if key.memsim_only else "")))  # fmt: skip
        for key, why in NOT_MODELLED.get(name, {}).items():
            table.add_row(key, "", "", "", escape(f"accepted, not modelled: {why}"))
        _console().print(table)


@app.command("check")
@reports(MemsimError)
def check(
    config: str = typer.Argument("ddr4_8gb_x8_3200", help="DRAMSim3 .ini file or preset name"),
    trace: Path | None = typer.Argument(None, help="Trace to run; default: seeded random traffic"),
    cycles: int = typer.Option(50_000, "--cycles", "-c", help="Cycles to simulate"),
    requests: int = typer.Option(5_000, help="Random requests when no trace is given"),
    seed: int = typer.Option(0, help="Seed of the random traffic"),
    strict: bool = STRICT,
    mode: str | None = MODE,
) -> None:
    """Run the independent protocol checker over every command issued; exit 1 on any violation."""
    from memsim.checker import check_commands
    from memsim.fuzz import random_trace
    from memsim.memory_system import MemorySystem
    from memsim.trace import TraceFrontend, read_trace

    with config_notices():
        system = MemorySystem(config, functional=False, mode=mode, strict=strict)
    tr = read_trace(trace) if trace else random_trace(system.spec, requests, seed=seed)
    TraceFrontend(system, tr).run(cycles)
    commands = system.issued_commands()
    violations = check_commands(system.spec, commands, cycles)
    console = _console()
    for v in violations[:20]:
        console.print(f"[red]violation[/] {escape(str(v))}", highlight=False)
    console.print(f"{len(commands):,} commands checked against {system.spec.name}: {len(violations)} violations")
    if violations:
        raise typer.Exit(code=1)
