"""`zaya memsim rtl ...`: the memory system as generated RTL.

- `rtl CONFIG -o DIR`: write the Verilog (channel, simulation store, top, AXI4 top, params.json).
- `rtl verify CONFIG TRACE --cycles N`: run it under Verilator and compare with memsim's Python engine; exit 0
  only when the command streams and the reads are identical and the protocol checker finds nothing.
- `rtl synth CONFIG`: yosys `synth` of the channel; flip-flops and cells.
"""

from pathlib import Path

import typer
from rich.console import Console
from rich.markup import escape
from zaya_config.cli_errors import fail, reports

from memsim.cli_common import MODE, STRICT, config_notices
from memsim.errors import MemsimError

ACTIONS = ("verify", "synth")


@reports(MemsimError)
def rtl(
    words: list[str] = typer.Argument(
        ...,
        metavar="CONFIG | verify CONFIG TRACE | synth CONFIG",
        help="What to do: generate CONFIG's RTL, verify it on TRACE, or synthesize it",
    ),
    out: Path = typer.Option(Path("memsim_rtl"), "--out", "-o", help="Folder for the generated files (and logs)"),
    cycles: int = typer.Option(100_000, "--cycles", "-c", help="verify: cycles to simulate"),
    seed: int = typer.Option(0, "--seed", help="verify: seed of the bytes the writes carry"),
    build_dir: Path | None = typer.Option(None, "--build-dir", help="verify: where Verilator builds are kept"),
    mode: str | None = MODE,
    strict: bool = STRICT,
) -> None:
    """Generate, verify (Verilator vs the Python engine) or synthesize (yosys) memsim's RTL memory system."""
    action = words[0] if words[0] in ACTIONS else "generate"
    args = words[1:] if action != "generate" else words
    wanted = {"generate": 1, "verify": 2, "synth": 1}[action]
    if len(args) != wanted:
        usage = {"generate": "CONFIG -o DIR", "verify": "verify CONFIG TRACE --cycles N", "synth": "synth CONFIG"}
        fail(ValueError(f"zaya memsim rtl {usage[action]}: got {len(args)} argument(s) ({' '.join(args)})"))
    err = Console(stderr=True)
    if action == "verify":
        _verify(args[0], Path(args[1]), cycles, mode, strict, seed, build_dir, err)
    elif action == "synth":
        _synth(args[0], out, mode, strict, err)
    else:
        from memsim.rtl.generate import generate_rtl
        from memsim.spec import load_spec

        with config_notices():
            spec = load_spec(args[0], mode=mode, strict=strict)
        rtl_files = generate_rtl(spec, out)
        Console().print(
            f"wrote {escape(str(out))}: {', '.join(p.name for p in [*rtl_files.axi_sources, rtl_files.params])}"
        )


def _verify(config: str, trace_path: Path, cycles: int, mode, strict: bool, seed: int, build_dir, err) -> None:
    from memsim.rtl.verify import verify
    from memsim.trace import read_trace

    if cycles <= 0:
        fail(ValueError(f"--cycles {cycles}: give a positive number of cycles"))
    with config_notices():
        trace = read_trace(trace_path)
    with err.status("building the RTL under Verilator (cached) and running both engines"), config_notices():
        result = verify(config, trace, cycles, mode=mode, strict=strict, build_root=build_dir, seed=seed)
    out = Console()
    out.print(f"{result.commands} commands, {result.reads_completed} of {result.reads} reads completed in {cycles} "
              f"cycles; RTL simulation {result.rtl_wall_s:.2f} s ({cycles / max(result.rtl_wall_s, 1e-9):,.0f} "
              "cycles/s)", highlight=False)  # fmt: skip
    for line in result.mismatches:
        out.print(f"[red]differs:[/] {escape(line)}", highlight=False)
    for line in result.violations[:20]:
        out.print(f"[red]protocol:[/] {escape(line)}", highlight=False)
    if not result.identical:
        out.print(f"[bold red]NOT identical[/] ({len(result.violations)} protocol violations)")
        raise typer.Exit(code=1)
    out.print("[bold green]identical[/]: same commands at the same cycles, same reads; 0 protocol violations")


def _synth(config: str, out: Path, mode, strict: bool, err) -> None:
    from memsim.rtl.generate import generate_rtl
    from memsim.rtl.synth import synthesize
    from memsim.spec import load_spec

    with config_notices():
        spec = load_spec(config, mode=mode, strict=strict)
    rtl_files = generate_rtl(spec, out)
    with err.status(f"yosys synth of {rtl_files.prefix}_channel"):
        report = synthesize(rtl_files, out / "yosys.log")
    Console().print(f"{rtl_files.prefix}_channel: {report.cells} cells, {report.flip_flops} flip-flops, "
                    f"{report.latches} latches (log: {escape(str(out / 'yosys.log'))})", highlight=False)  # fmt: skip
    if not report.clean:
        raise typer.Exit(code=1)
