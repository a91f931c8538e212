"""`zaya data inspect` and `zaya data convert`: look into a prepared dataset (zarr or Megatron `.bin/.idx`)
and convert between the two without re-tokenizing. cli.py mounts them on the `data` app; this module
imports nothing heavy until a command runs.
"""

import json
from pathlib import Path

import typer
from zaya_config.cli_errors import reports

from zaya_train.errors import ZayaTrainError


@reports(ZayaTrainError)
def inspect_command(
    path: Path = typer.Argument(..., help="A prepared zarr dataset folder or a Megatron prefix (PATH.bin + PATH.idx)"),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object instead of a table"),
) -> None:
    """Print what a prepared dataset holds: format, documents, tokens, dtype and the first document's ids."""
    from zaya_train.data.describe import describe

    info = describe(path)
    if as_json:
        typer.echo(json.dumps(info))
        return
    from rich.console import Console
    from rich.table import Table

    table = Table(title=str(path), show_header=False)
    for key in ("format", "documents", "tokens", "dtype"):
        table.add_row(key, str(info[key]))
    for split, counts in info.get("splits", {}).items():
        table.add_row(split, f"{counts['documents']} documents, {counts['tokens']} tokens")
    if "tokenizer" in info:
        tok = info["tokenizer"]
        table.add_row("tokenizer", f"{tok.get('kind')} (vocab {tok.get('vocab_size')}, eos {tok.get('eos_id')})")
    first = info["first_document"]
    table.add_row("first_document", f"{first[:16]}{' ...' if len(first) > 16 else ''} ({len(first)} ids)")
    Console().print(table)


@reports(ZayaTrainError)
def convert_command(
    src: Path = typer.Argument(..., help="A prepared zarr dataset folder, or a Megatron prefix"),
    dst: Path = typer.Argument(..., help="The new Megatron prefix (writes DST.bin, DST.idx) or zarr folder"),
    to: str = typer.Option(..., "--to", help="megatron | zarr"),
    split: str = typer.Option(
        "all", help="--to megatron: all (the train split's documents, then the validation split's) | train | val"
    ),
    tokenizer: str = typer.Option(
        None, help="--to zarr from a prefix zaya did not write: byte | path to the tokenizer.json of its ids"
    ),
    eos_token: str = typer.Option("<|endoftext|>", help="The EOS token of --tokenizer's tokenizer.json"),
    val_fraction: float = typer.Option(
        0.05, help="--to zarr from a prefix zaya did not write: share of documents held out (by document index)"
    ),
    overwrite: bool = typer.Option(False, help="Replace an existing DST"),
    progress: bool = typer.Option(True, help="Show a progress bar"),
) -> None:
    """Convert SRC to the other format at DST: token ids copied as they are, one document per Megatron
    sequence, atomic at DST."""
    from zaya_train.config import TokenizerConfig
    from zaya_train.data.convert import convert

    tok = None
    if tokenizer == "byte":
        tok = TokenizerConfig(kind="byte")
    elif tokenizer is not None:
        tok = TokenizerConfig(kind="file", path=tokenizer, eos_token=eos_token)
    done = convert(
        src, dst, to, split=split, overwrite=overwrite, tokenizer=tok, val_fraction=val_fraction, progress=progress
    )
    typer.echo(f"wrote {dst} ({to}): {done['documents']} documents, {done['tokens']} tokens")
