"""A Megatron prefix (`<prefix>.bin/.idx`) as a training source: its train and validation streams, and the
check that the run's tokenizer is the one its ids came from, with no re-tokenizing.

Which documents are held out: megatron_split.py (the notes' split, megatron_notes.py, else a hash of each
document's index).
"""

from pathlib import Path

import numpy as np

from zaya_train.config import SourceConfig
from zaya_train.data.concat_tokens import ConcatTokens
from zaya_train.data.megatron_indexed import MegatronIndexed, is_megatron_prefix
from zaya_train.data.megatron_notes import notes_path, read_notes
from zaya_train.data.megatron_split import validation_mask
from zaya_train.data.shards import IN_MEMORY_LIMIT_BYTES, SPLITS, TokenStream
from zaya_train.data.tokenizers import Tokenizer
from zaya_train.errors import ZayaTrainError


def split_stream(data: MegatronIndexed, keep: np.ndarray) -> TokenStream:
    """The documents where `keep` is true, in order, as one stream (runs of neighbours read as one slice)."""
    index = np.flatnonzero(keep)
    starts, ends = data.doc_offsets[index], data.doc_offsets[index + 1]
    offsets = np.concatenate([[0], np.cumsum(ends - starts)]).astype(np.uint64)
    breaks = np.flatnonzero(starts[1:] != ends[:-1]) + 1  # where the next kept document is not adjacent
    bounds = zip([0, *breaks], [*breaks, len(index)], strict=True) if len(index) else []
    parts = [data.tokens[int(starts[a]) : int(ends[b - 1])] for a, b in bounds]
    if int(offsets[-1]) * 4 <= IN_MEMORY_LIMIT_BYTES:
        tokens = np.concatenate([np.asarray(p, dtype=np.uint32) for p in parts]) if parts else np.zeros(0, np.uint32)
    else:
        tokens = ConcatTokens(parts)
    return TokenStream(tokens, offsets)


def is_megatron_source(source: SourceConfig) -> bool:
    """Whether a source's path names a Megatron prefix (`<path>.bin/.idx`) rather than text or zarr."""
    return source.path != "stdlib" and not Path(source.path).is_dir() and is_megatron_prefix(source.path)


def check_tokenizer(data: MegatronIndexed, source: SourceConfig, tokenizer: Tokenizer, key: str) -> None:
    """Refuse a run whose tokenizer is not the data's: the notes' tokenizer, the source's `vocab_size` and
    `eos_id` when named, and else every id below the tokenizer's vocabulary (one pass over the `.bin`)."""
    mine = tokenizer.describe()
    notes = read_notes(data.prefix)
    if notes is not None and (notes.tokenizer.get("fingerprint"), notes.tokenizer.get("eos_id")) != (
        mine["fingerprint"],
        mine["eos_id"],
    ):
        raise ZayaTrainError(
            f"{key}: {data.prefix} was tokenized with {notes.tokenizer} ({notes_path(data.prefix).name}), but the "
            f"run uses {mine}; configure the matching train.data.tokenizer"
        )
    for name, want in (("vocab_size", tokenizer.vocab_size), ("eos_id", tokenizer.eos_id)):
        named = getattr(source, name)
        if named is not None and named != want:
            raise ZayaTrainError(
                f"{key}.{name} = {named}, but the run's tokenizer has {name} {want}; "
                "configure the tokenizer the data was made with (train.data.tokenizer)"
            )
    if notes is None and source.vocab_size is None:
        top = data.max_id()
        if top >= tokenizer.vocab_size:
            raise ZayaTrainError(
                f"{key}: {data.prefix} holds id {top} >= the run tokenizer's vocab_size {tokenizer.vocab_size}; "
                "configure the tokenizer the data was made with (train.data.tokenizer), or name it in "
                f"{key}.vocab_size"
            )


def megatron_streams(
    source: SourceConfig, tokenizer: Tokenizer, val_fraction: float, key: str, cache: Path | None = None
) -> dict[str, TokenStream]:
    """A Megatron source's `train` and `val` streams, after the tokenizer check (the split kept in `cache`)."""
    data = MegatronIndexed(source.path)
    check_tokenizer(data, source, tokenizer, key)
    held = validation_mask(data, val_fraction, cache)
    return {split: split_stream(data, held if split == "val" else ~held) for split in SPLITS}
