"""`zaya ckpt inspect|convert|verify`: look at, reshape/convert and check checkpoints of any format.

Kept light: torch, the formats and rich are imported inside the commands so `zaya --help` stays fast, and
`convert` prints with click alone: a conversion that needs no torch starts in a fraction of a second.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

import typer
from zaya_config.cli_errors import reports

from ckpt_reshape.errors import ReshapeError

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table

app = typer.Typer(help="Checkpoint layouts and formats: inspect, convert (reshape), verify.", no_args_is_help=True)


@cache
def _console() -> Console:
    """rich's console, for `inspect` and `verify`: a message is one line (greppable); the terminal wraps it."""
    from rich.console import Console

    return Console(soft_wrap=True)


def escape(text: str) -> str:
    """rich's markup escaping (`[` in names), imported when a command prints through rich."""
    from rich.markup import escape as rich_escape

    return rich_escape(text)


def _size(nbytes: int) -> str:
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if nbytes < 1000 or unit == "TB":
            return f"{nbytes:.0f} {unit}" if unit == "B" else f"{nbytes:.2f} {unit}"
        nbytes /= 1000
    return str(nbytes)


def _print_table(table: Table) -> None:
    """On a terminal, fit its width; piped into grep or a file, one line per row however wide the table."""
    from rich.console import Console

    console = _console()
    if console.is_terminal:
        console.print(table)
        return
    unbounded = console.options.update_width(1 << 16)
    width = max(console.width, console.measure(table, options=unbounded).maximum)
    Console(width=width, color_system=None).print(table)


@app.command("inspect")
@reports(ReshapeError)
def inspect_cmd(
    path: Path = typer.Argument(
        ..., help="Checkpoint: DCP folder, Megatron torch_dist folder, zarr group, HF folder or torch.save file"
    ),
    limit: int = typer.Option(50, help="Show at most this many tensors (0: all)"),
    model_config: str = typer.Option(None, "--model-config", help="ZAYA preset or config.json (for the TP splits)"),
) -> None:
    """Format, layout, and per tensor its shape, dtype, size, how it is split and into how many pieces."""
    from rich.table import Table

    from ckpt_reshape.formats import open_checkpoint
    from ckpt_reshape.pieces import count_layers, plan_pieces
    from ckpt_reshape.zaya_names import default_split_table, model_config_for

    console = _console()
    with open_checkpoint(path) as reader:
        index = reader.index
        console.print(f"[bold]{escape(str(reader.path))}[/]  format: {reader.format_name}", soft_wrap=True)
        console.print(f"layout: {index.layout if index.layout else 'not recorded'}")
        console.print(
            f"{len(index.tensors)} tensors, {_size(index.total_bytes)}; largest {_size(index.largest_tensor_bytes)}; "
            f"{len(index.objects)} other entries; optimizer state: {'yes' if index.has_optimizer() else 'no'}"
        )
        splits = reader.split_table() or default_split_table(index, model_config_for(index, reader.path, model_config))
        console.print(f"split rules: {escape(str(splits.source))}", highlight=False)
        table = Table("tensor", "shape", "dtype", "size", "split", "pieces")
        shown = list(index.tensors.values())
        layers = count_layers(index)
        for meta in shown[: limit or None]:
            spec = splits.spec_for(meta.name, meta.shape)
            try:
                pieces = str(len(plan_pieces(meta, spec, index.layout, layers))) if index.layout else "-"
            except ReshapeError:
                pieces = "does not fit the layout"
            table.add_row(
                escape(meta.name),
                "x".join(map(str, meta.shape)) or "scalar",
                str(meta.dtype)[6:],
                _size(meta.nbytes),
                escape(spec.describe()),
                pieces,
            )
        table.columns[0].overflow = "fold"  # a tensor's name is never cut short, only wrapped
        _print_table(table)
        if limit and len(shown) > limit:
            console.print(f"... and {len(shown) - limit} more (--limit 0 shows all)")


@app.command("convert")
@reports(ReshapeError)
def convert_cmd(
    src: Path = typer.Argument(..., help="Source checkpoint (any format; never modified)"),
    dst: Path = typer.Argument(..., help="Destination (folder, or file for --to torch)"),
    to: str = typer.Option(..., "--to", help="Target format: dcp|zarr|hf|torch|megatron|torchtitan"),
    layout: str = typer.Option(
        None, "--layout", help="Target layout, e.g. dp=4,tp=2,pp=1,ep=2,fsdp=1 (default: source's)"
    ),
    model_only: bool = typer.Option(False, "--model-only", help="Drop optimizer and trainer state"),
    model_config: str = typer.Option(None, "--model-config", help="ZAYA preset or config.json (for HF export / TP)"),
    force: bool = typer.Option(False, "--force", help="Replace DST if it exists"),
    fsync: bool = typer.Option(
        True,
        "--fsync/--no-fsync",
        help="Force every file to disk before DST appears (default). --no-fsync is as fast as cp and still "
        "atomic for other processes, but an OS crash soon after can leave DST with missing data (verify finds it)",
    ),
    io_threads: int = typer.Option(2, "--io-threads", help="Reader threads"),
    quiet: bool = typer.Option(False, "--quiet", help="No progress bar"),
) -> None:
    """Convert between formats and/or reshape to another parallel layout (streaming; atomic output)."""
    from ckpt_reshape.convert import convert
    from ckpt_reshape.layout import ParallelLayout

    target = ParallelLayout.parse(layout) if layout else None
    result = convert(
        src,
        dst,
        to,
        target,
        model_only=model_only,
        force=force,
        io_threads=io_threads,
        progress=not quiet,
        model_config=model_config,
        durable=fsync,
    )
    typer.echo(
        f"wrote {result.dst} ({result.fmt}, layout {result.layout}): {result.tensors} tensors, "
        f"{result.objects} other entries, {_size(result.bytes_written)}"
    )
    if result.dropped:
        from ckpt_reshape.verify import summarize_entries

        typer.echo(f"not carried by {result.fmt}: {summarize_entries(result.dropped)}")


@app.command("verify")
@reports(ReshapeError)
def verify_cmd(
    a: Path = typer.Argument(..., help="Checkpoint to verify"),
    b: Path = typer.Argument(None, help="Second checkpoint: compare A and B logically, bitwise"),
) -> None:
    """Recompute checksums of A, or compare A and B tensor by tensor whatever their layouts and formats."""
    from ckpt_reshape.verify import compare, verify

    report = verify(a) if b is None else compare(a, b)
    console = _console()
    for note in report.notes:
        console.print(f"note: {escape(note)}", highlight=False)
    for problem in report.problems:
        console.print(f"[red]problem:[/] {escape(problem)}", highlight=False)
    what = "checksums" if b is None else "logical comparison"
    status = "[green]OK[/]" if report.ok else f"[red]FAILED ({len(report.problems)} problems)[/]"
    console.print(f"{what}: {status}; {report.checked_tensors} tensors, {report.checked_objects} other entries")
    if not report.ok:
        raise typer.Exit(code=1)
