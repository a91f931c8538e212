"""`zaya data convert`: a prepared zarr dataset to a Megatron `.bin/.idx` prefix and back, token ids copied
as they are (no re-tokenizing), document boundaries kept, streamed document by document, atomic at the
destination.

zarr -> megatron writes the train split's documents, then the validation split's (`split="all"`), or one
split, one Megatron sequence per document, and leaves notes beside the pair (megatron_notes.py: the
tokenizer, and the split sizes when both were written). megatron -> zarr splits by those notes, else by the
hash of each document's index (as training on the prefix does); without notes it needs the tokenizer the ids
came from (`tokenizer`), which the shard records. So zarr -> megatron -> zarr gives the same tokens, offsets
and tokenizer, bit for bit.
"""

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from itertools import pairwise
from pathlib import Path

import numpy as np
from zaya_config.atomic import write_dir_atomic

from zaya_train.config import TokenizerConfig
from zaya_train.data.describe import FORMATS, dataset_format
from zaya_train.data.megatron_indexed import (
    MegatronIndexed,
    bin_path,
    idx_path,
    is_megatron_prefix,
    megatron_prefix,
    token_dtype,
    write_megatron,
)
from zaya_train.data.megatron_notes import MegatronNotes, notes_path, read_notes
from zaya_train.data.megatron_split import validation_mask
from zaya_train.data.shards import SPLITS, ShardBuilder, TokenShard
from zaya_train.data.tokenizers import load_tokenizer
from zaya_train.errors import ZayaTrainError

SPLIT_CHOICES = ("all", *SPLITS)


@contextmanager
def progress_bar(description: str, total: int, enabled: bool) -> Iterator[Callable[[], None]]:
    """A rich bar over documents; yields the call that advances it by one."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn())
    with Progress(*columns, disable=not enabled, transient=True) as bar:
        task = bar.add_task(description, total=total)
        yield lambda: bar.advance(task)


def _refuse_existing(dst: Path, to: str, overwrite: bool) -> None:
    exists = is_megatron_prefix(dst) or dst.exists() if to == "megatron" else dst.exists()
    if exists and not overwrite:
        what = f"{bin_path(dst)} / {idx_path(dst)}" if to == "megatron" else str(dst)
        raise ZayaTrainError(f"{what} already exists; pass --overwrite to replace it, or choose another destination")


def _zarr_documents(shard: TokenShard, splits: tuple[str, ...], advance, block: int = 1 << 24) -> Iterator[np.ndarray]:
    """Each document of `splits` in order, read a block of whole documents at a time (a split larger than
    memory is zarr-backed: one read per block, not one per document)."""
    for split in splits:
        stream = shard.split(split)
        offsets = stream.doc_offsets.astype(np.int64)
        first, count = 0, len(offsets) - 1
        while first < count:
            start = int(offsets[first])
            last = max(int(np.searchsorted(offsets, start + block, side="right")) - 1, first + 1)
            tokens = np.asarray(stream.tokens[start : int(offsets[last])])
            for a, b in pairwise(offsets[first : last + 1] - start):
                yield tokens[a:b]
                advance()
            first = last


def to_megatron(src: Path, dst: Path, split: str, progress: bool) -> dict:
    """A zarr dataset's documents (both splits, train first, or one) as a Megatron prefix with our notes."""
    shard = TokenShard(src)
    splits = SPLITS if split == "all" else (split,)
    total = sum(shard.num_docs[s] for s in splits)
    notes_path(dst).unlink(missing_ok=True)  # notes of older files must not describe the new pair
    with progress_bar(f"converting {src.name} to megatron", total, enabled=progress) as advance:
        write_megatron(dst, _zarr_documents(shard, splits, advance), token_dtype(int(shard.tokenizer["vocab_size"])))
    counts = {s: shard.num_docs[s] for s in SPLITS} if split == "all" else None
    MegatronNotes(shard.tokenizer, counts).write(dst)
    return {"documents": total, "tokens": sum(shard.num_tokens[s] for s in splits)}


def to_zarr(src: Path, dst: Path, tokenizer: TokenizerConfig | None, val_fraction: float, progress: bool) -> dict:
    """A Megatron prefix as a zarr shard: the notes' or the hash split, the notes' or the named tokenizer."""
    data = MegatronIndexed(src)
    notes = read_notes(data.prefix)
    if tokenizer is not None:
        tok = load_tokenizer(tokenizer)
        described = tok.describe()
        top = data.max_id()
        if top >= tok.vocab_size:
            raise ZayaTrainError(f"{data.prefix} holds id {top} >= the tokenizer's vocab_size {tok.vocab_size}")
    elif notes is not None:
        described = notes.tokenizer
    else:
        raise ZayaTrainError(
            f"{data.prefix} was not written by zaya (no {notes_path(data.prefix).name}): name the tokenizer its ids "
            "came from with --tokenizer (byte, or a tokenizer.json), so the shard can record it"
        )
    held = validation_mask(data, val_fraction)

    def fill(tmp: Path) -> None:
        builder = ShardBuilder(tmp, described)
        with progress_bar(f"converting {data.prefix.name} to zarr", data.num_documents, enabled=progress) as advance:
            for index in range(data.num_documents):
                builder.add(np.asarray(data.document(index), dtype=np.uint32), "val" if held[index] else "train")
                advance()
        builder.close()

    write_dir_atomic(dst, fill)
    return {"documents": data.num_documents, "tokens": data.num_tokens}


def convert(
    src: Path | str,
    dst: Path | str,
    to: str,
    *,
    split: str = "all",
    overwrite: bool = False,
    tokenizer: TokenizerConfig | None = None,
    val_fraction: float = 0.05,
    progress: bool = True,
) -> dict:
    """Convert `src` to format `to` at `dst`; returns {documents, tokens} written."""
    src, dst = Path(src), Path(dst)
    if to not in FORMATS:
        raise ZayaTrainError(f"--to {to!r}; allowed: {', '.join(FORMATS)}")
    if split not in SPLIT_CHOICES:
        raise ZayaTrainError(f"--split {split!r}; allowed: {', '.join(SPLIT_CHOICES)}")
    if not 0 < val_fraction < 1:
        raise ZayaTrainError(f"--val-fraction {val_fraction} must be in (0, 1)")
    have = dataset_format(src)
    if have == to:
        raise ZayaTrainError(f"{src} is already {to}; --to names the other format ({', '.join(FORMATS)})")
    if megatron_prefix(dst) == megatron_prefix(src) or dst.resolve() == src.resolve():
        raise ZayaTrainError(f"destination {dst} is the source; choose another path")
    _refuse_existing(dst, to, overwrite)
    if to == "megatron":
        return to_megatron(src, megatron_prefix(dst), split, progress)
    return to_zarr(src, dst, tokenizer, val_fraction, progress)
