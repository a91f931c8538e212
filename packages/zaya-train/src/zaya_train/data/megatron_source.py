"""A Megatron prefix (`<prefix>.bin/.idx`) as a training source: its train and validation streams, and the
check that the run's tokenizer is the one its ids came from, with no re-tokenizing.

Which documents are held out: those `zaya data convert --to megatron` recorded in the notes it leaves beside
the pair (`<prefix>.zaya.json`: the zarr dataset's tokenizer and how many documents each split has, train
first), or, for any other prefix, a hash of the document's index (`corpus.is_validation(str(index))`, the rule
text documents follow by name), so the split is the same on every machine and every run.
"""

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from zaya_config.atomic import write_text_atomic

from zaya_train.config import SourceConfig
from zaya_train.data.concat_tokens import ConcatTokens
from zaya_train.data.corpus import is_validation
from zaya_train.data.megatron_indexed import MegatronIndexed, is_megatron_prefix, megatron_prefix
from zaya_train.data.shards import IN_MEMORY_LIMIT_BYTES, SPLITS, TokenStream
from zaya_train.data.tokenizers import Tokenizer
from zaya_train.errors import ZayaTrainError

NOTES_FORMAT = "zaya-megatron-notes-v1"


def notes_path(prefix: Path | str) -> Path:
    """`<prefix>.zaya.json`: what zaya knows about a prefix it wrote (tokenizer, split sizes)."""
    return Path(f"{megatron_prefix(prefix)}.zaya.json")


@dataclass(frozen=True)
class MegatronNotes:
    """The zarr dataset's tokenizer description and, when both splits were written, their document counts."""

    tokenizer: dict
    splits: dict[str, int] | None

    def write(self, prefix: Path | str) -> Path:
        """Beside the pair, atomically."""
        body = {"format": NOTES_FORMAT, "tokenizer": self.tokenizer, "splits": self.splits}
        return write_text_atomic(notes_path(prefix), json.dumps(body, indent=1) + "\n")


def read_notes(prefix: Path | str) -> MegatronNotes | None:
    """The notes of a prefix we wrote; None for a prefix Megatron (or anyone else) wrote."""
    path = notes_path(prefix)
    if not path.is_file():
        return None
    try:
        body = json.loads(path.read_text(encoding="utf-8"))
        if body.get("format") != NOTES_FORMAT:
            raise ValueError(f"format {body.get('format')!r}, expected {NOTES_FORMAT!r}")
        return MegatronNotes(dict(body["tokenizer"]), body.get("splits"))
    except (ValueError, KeyError, TypeError, AttributeError) as err:
        raise ZayaTrainError(
            f"{path}: not zaya's notes of a Megatron prefix ({err}); delete it or rewrite it"
        ) from None


def validation_mask(data: MegatronIndexed, val_fraction: float) -> np.ndarray:
    """Which documents are held out (bool per document): the notes' split, else a hash of each index."""
    notes = read_notes(data.prefix)
    if notes is not None and notes.splits is not None:
        if sum(notes.splits.values()) != data.num_documents:
            raise ZayaTrainError(
                f"{notes_path(data.prefix)} counts {sum(notes.splits.values())} documents, the prefix has "
                f"{data.num_documents}; the notes belong to other files: delete them"
            )
        return np.arange(data.num_documents) >= notes.splits["train"]
    return np.fromiter(
        (is_validation(str(i), val_fraction) for i in range(data.num_documents)), bool, data.num_documents
    )


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
    source: SourceConfig, tokenizer: Tokenizer, val_fraction: float, key: str
) -> dict[str, TokenStream]:
    """A Megatron source's `train` and `val` streams, after the tokenizer check."""
    data = MegatronIndexed(source.path)
    check_tokenizer(data, source, tokenizer, key)
    held = validation_mask(data, val_fraction)
    return {split: split_stream(data, held if split == "val" else ~held) for split in SPLITS}
