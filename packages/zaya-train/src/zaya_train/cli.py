"""`zaya data ...`: tokenize text into a prepared dataset of zarr token shards (the `data` sub-app of `zaya`)."""

from pathlib import Path

import typer
from zaya_config.cli_errors import reports

from zaya_train.data_formats_cli import convert_command, inspect_command  # zarr <-> Megatron .bin/.idx
from zaya_train.errors import ZayaTrainError

data_app = typer.Typer(help="Prepare training data: text -> zarr token shards.", no_args_is_help=True)


@data_app.command("prepare")
@reports(ZayaTrainError)
def prepare(
    inputs: list[Path] = typer.Argument(
        ..., help="Text files or folders (one file = one document); jsonl(.gz/.zst), parquet, datasets folders"
    ),
    out: Path = typer.Option(..., "--out", "-o", help="Output dataset folder, e.g. data/code.zarr"),
    tokenizer: str = typer.Option("byte", help="byte | bpe | path to a tokenizer.json"),
    vocab_size: int = typer.Option(2048, help="BPE vocabulary size (with --tokenizer bpe)"),
    glob: str = typer.Option(
        "**/*", help="Which files of a folder to read (given: those, each read as its suffix says)"
    ),
    field: str = typer.Option("text", help="The text field / column of jsonl, parquet and datasets records"),
    on_error: str = typer.Option("raise", help="A bad record: raise (stop, naming it) | skip (count it)"),
    val_fraction: float = typer.Option(0.05, help="Share of documents held out for validation"),
    eos_token: str = typer.Option("<|endoftext|>", help="Document separator token of a BPE/tokenizer.json"),
    workers: int = typer.Option(None, help="Tasks run at once (local: default the CPU count; slurm: no limit)"),
    shard_mb: float = typer.Option(32, help="Plain-text files are grouped into tasks of about this many MB"),
    executor: str = typer.Option("local", help="local (a process pool here) | slurm (a job array)"),
    partition: str = typer.Option(None, help="Slurm partition (with --executor slurm)"),
    time: str = typer.Option("04:00:00", help="Slurm time limit per task"),
    mem_per_cpu_gb: int = typer.Option(2, help="Slurm memory per CPU in GB"),
    progress: bool = typer.Option(True, help="Show a progress bar"),
) -> None:
    """Tokenize documents into OUT: one zarr shard per task (uint32 tokens, EOS after every document, document
    offsets, val split) and an index; rerun the same command to resume a killed prepare."""
    from zaya_train.config import TokenizerConfig
    from zaya_train.data.dataset import PLAN
    from zaya_train.data.prepare.executors import SlurmOptions, check_executor
    from zaya_train.data.prepare.inputs import list_inputs, plan_tasks
    from zaya_train.data.prepare.read_step import iter_texts_of
    from zaya_train.data.prepare.run import prepare_dataset
    from zaya_train.data.readers import ON_ERROR
    from zaya_train.data.shards import TokenShard
    from zaya_train.data.tokenizers import train_bpe

    if not 0 < val_fraction < 1:
        raise ZayaTrainError(f"--val-fraction {val_fraction} must be in (0, 1)")
    if on_error not in ON_ERROR:
        raise ZayaTrainError(f"--on-error {on_error!r} is not one of {', '.join(ON_ERROR)}")
    slurm = SlurmOptions(partition=partition, time=time, mem_per_cpu_gb=mem_per_cpu_gb) if partition else None
    check_executor(executor, slurm)
    tasks = plan_tasks(list_inputs(inputs, glob), int(shard_mb * (1 << 20)))
    if tokenizer == "bpe":
        tok_file = out.with_suffix(".tokenizer.json")  # beside OUT, where train=h200 looks for it
        if not ((out / PLAN).is_file() and tok_file.is_file()):  # a resumed prepare keeps the BPE it trained
            train_bpe(iter_texts_of(tasks, 50_000_000, field), vocab_size, eos_token, tok_file)
        tok_cfg = TokenizerConfig(kind="file", path=str(tok_file), eos_token=eos_token)
    elif tokenizer == "byte":
        tok_cfg = TokenizerConfig(kind="byte")
    else:
        tok_cfg = TokenizerConfig(kind="file", path=tokenizer, eos_token=eos_token)
    done = prepare_dataset(
        tasks, tok_cfg, out, val_fraction, field=field, on_error=on_error, executor=executor, workers=workers, slurm=slurm,
        progress=progress,
    )  # fmt: skip
    if not done:
        typer.echo(f"submitted {len(tasks)} tasks to Slurm; {out}/index.json appears when the last one is done")
        return
    shard = TokenShard(out)
    typer.echo(
        f"wrote {out}: {len(tasks)} shards, {sum(shard.num_docs.values())} documents, "
        f"train {shard.num_tokens['train']} tokens, val {shard.num_tokens['val']} tokens, "
        f"tokenizer {shard.tokenizer['kind']} (vocab {shard.tokenizer['vocab_size']}, eos {shard.tokenizer['eos_id']})"
    )


data_app.command("inspect")(inspect_command)
data_app.command("convert")(convert_command)
