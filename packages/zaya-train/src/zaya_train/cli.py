"""`zaya data ...`: turn text files or folders into zarr token shards (the `data` sub-app of `zaya`)."""

from pathlib import Path

import typer
from zaya_config.cli_errors import reports

from zaya_train.errors import ZayaTrainError

data_app = typer.Typer(help="Prepare training data: text -> zarr token shards.", no_args_is_help=True)


@data_app.command("prepare")
@reports(ZayaTrainError)
def prepare(
    inputs: list[Path] = typer.Argument(..., help="Text files or folders (one file = one document)"),
    out: Path = typer.Option(..., "--out", "-o", help="Output shard folder, e.g. data/code.zarr"),
    tokenizer: str = typer.Option("byte", help="byte | bpe | path to a tokenizer.json"),
    vocab_size: int = typer.Option(2048, help="BPE vocabulary size (with --tokenizer bpe)"),
    glob: str = typer.Option("**/*", help="Which files of a folder to read"),
    val_fraction: float = typer.Option(0.05, help="Share of documents held out for validation"),
    eos_token: str = typer.Option("<|endoftext|>", help="Document separator token of a BPE/tokenizer.json"),
    progress: bool = typer.Option(True, help="Show a progress bar"),
) -> None:
    """Tokenize documents into OUT (uint32 tokens, EOS between documents, document offsets, val split)."""
    from zaya_train.config import SourceConfig, TokenizerConfig
    from zaya_train.data.corpus import iter_texts, list_documents
    from zaya_train.data.shards import TokenShard, write_shard
    from zaya_train.data.tokenizers import load_tokenizer, train_bpe

    if not 0 < val_fraction < 1:
        raise ZayaTrainError(f"--val-fraction {val_fraction} must be in (0, 1)")
    docs = []
    for path in inputs:
        docs += list_documents(SourceConfig(path=str(path), glob=glob, exclude=[]), key=str(path))
    if tokenizer == "bpe":
        tok_file = train_bpe(iter_texts(docs, 50_000_000), vocab_size, eos_token, out.with_suffix(".tokenizer.json"))
        tok_cfg = TokenizerConfig(kind="file", path=str(tok_file), eos_token=eos_token)
    elif tokenizer == "byte":
        tok_cfg = TokenizerConfig(kind="byte")
    else:
        tok_cfg = TokenizerConfig(kind="file", path=tokenizer, eos_token=eos_token)
    tok = load_tokenizer(tok_cfg)
    write_shard(docs, tok, out, val_fraction, progress=progress)
    shard = TokenShard(out)
    typer.echo(
        f"wrote {out}: {len(docs)} documents, train {shard.num_tokens['train']} tokens, "
        f"val {shard.num_tokens['val']} tokens, tokenizer {shard.tokenizer['kind']} "
        f"(vocab {shard.tokenizer['vocab_size']}, eos {shard.tokenizer['eos_id']})"
    )
