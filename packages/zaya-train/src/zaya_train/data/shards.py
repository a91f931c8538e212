"""Token shards in zarr: documents tokenized, each followed by EOS, concatenated into one uint32 array per
split (`train`, `val`) with an index of document start offsets.

Layout of `<name>.zarr`: `train/tokens` and `val/tokens` (uint32, chunked), `train/doc_offsets` and
`val/doc_offsets` (uint64, n_docs + 1 entries), and group attributes describing the tokenizer, so a shard
made with one tokenizer is never read with another. Shards are written under a temporary name and renamed
into place, so a crash never leaves a half shard that looks whole.
"""

from dataclasses import dataclass
from pathlib import Path

import numpy as np
from zaya_config.atomic import write_dir_atomic

from zaya_train.data.corpus import Document, is_validation
from zaya_train.data.tokenizers import Tokenizer
from zaya_train.errors import ZayaTrainError

FORMAT = "zaya-token-shard-v1"
SPLITS = ("train", "val")
IN_MEMORY_LIMIT_BYTES = 1 << 30  # streams smaller than this are read into memory once


class _SplitWriter:
    """Appends documents to one split, flushing to zarr in whole chunks."""

    def __init__(self, group, split: str, chunk_tokens: int) -> None:
        self.tokens = group.create_array(f"{split}/tokens", shape=(0,), dtype="uint32", chunks=(chunk_tokens,))
        self.offsets = [0]
        self.buffer: list[np.ndarray] = []
        self.buffered = 0
        self.chunk_tokens = chunk_tokens

    def add(self, ids: np.ndarray) -> None:
        self.buffer.append(ids)
        self.buffered += len(ids)
        self.offsets.append(self.offsets[-1] + len(ids))
        if self.buffered >= self.chunk_tokens:
            self.flush()

    def flush(self) -> None:
        if self.buffer:
            self.tokens.append(np.concatenate(self.buffer))
            self.buffer, self.buffered = [], 0

    def close(self, group, split: str) -> None:
        self.flush()
        arr = np.asarray(self.offsets, dtype=np.uint64)
        offsets = group.create_array(
            f"{split}/doc_offsets", shape=arr.shape, dtype="uint64", chunks=(max(len(arr), 1),)
        )
        offsets[:] = arr


def write_shard(
    docs: list[Document],
    tokenizer: Tokenizer,
    out: Path,
    val_fraction: float,
    chunk_tokens: int = 1 << 16,
    progress: bool = True,
    description: str = "tokenizing",
) -> Path:
    """Tokenize `docs` into a shard at `out` (atomic: built beside it, then swapped in; `zaya_config.atomic`)."""
    import zarr
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    def fill(tmp: Path) -> None:
        group = zarr.open_group(str(tmp), mode="w")
        writers = {split: _SplitWriter(group, split, chunk_tokens) for split in SPLITS}
        columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn())
        with Progress(*columns, disable=not progress, transient=True) as bar:
            task = bar.add_task(description, total=len(docs))
            for doc in docs:
                ids = tokenizer.encode(doc.read())
                if ids.size and int(ids.max()) >= tokenizer.vocab_size:
                    raise ZayaTrainError(
                        f"tokenizer produced id {int(ids.max())} >= its vocab_size {tokenizer.vocab_size}"
                    )
                split = "val" if is_validation(doc.name, val_fraction) else "train"
                writers[split].add(np.append(ids, np.uint32(tokenizer.eos_id)))
                bar.advance(task)
        for split, writer in writers.items():
            writer.close(group, split)
        group.attrs.update(
            {
                "format": FORMAT,
                "tokenizer": tokenizer.describe(),
                "num_docs": {s: len(w.offsets) - 1 for s, w in writers.items()},
                "num_tokens": {s: w.offsets[-1] for s, w in writers.items()},
            }
        )

    return write_dir_atomic(Path(out), fill)


@dataclass
class TokenStream:
    """One split of a shard: a flat token array with document offsets."""

    tokens: np.ndarray
    doc_offsets: np.ndarray

    @property
    def num_tokens(self) -> int:
        return int(self.tokens.shape[0])

    def num_windows(self, seq_len: int) -> int:
        """How many packed training windows of seq_len inputs (+1 target) the stream holds."""
        return max((self.num_tokens - 1) // seq_len, 0)

    def window(self, index: int, seq_len: int) -> np.ndarray:
        """Packed window `index`: seq_len + 1 consecutive tokens, crossing document borders at EOS."""
        start = index * seq_len
        return np.asarray(self.tokens[start : start + seq_len + 1], dtype=np.int64)


class TokenShard:
    """A prepared shard opened for reading."""

    def __init__(self, path: Path) -> None:
        import zarr

        self.path = Path(path)
        if not self.path.is_dir():
            raise ZayaTrainError(f"token shard {self.path} does not exist; run `zaya data prepare` to make it")
        try:
            self._group = zarr.open_group(str(self.path), mode="r")
            attrs = dict(self._group.attrs)
        except Exception as err:
            raise ZayaTrainError(f"{self.path} is not a readable zarr token shard: {err}") from None
        if attrs.get("format") != FORMAT:
            raise ZayaTrainError(
                f"{self.path} is not a zaya token shard (format {attrs.get('format')!r}, "
                f"expected {FORMAT!r}); make it with `zaya data prepare`"
            )
        self.tokenizer: dict = attrs["tokenizer"]
        self.num_tokens: dict[str, int] = attrs["num_tokens"]

    def split(self, name: str) -> TokenStream:
        """The `train` or `val` stream (in memory when small enough, else read from zarr per window)."""
        tokens = self._group[f"{name}/tokens"]
        offsets = np.asarray(self._group[f"{name}/doc_offsets"][:])
        if tokens.shape[0] * 4 <= IN_MEMORY_LIMIT_BYTES:
            tokens = np.asarray(tokens[:])
        return TokenStream(tokens, offsets)

    def check_tokenizer(self, tokenizer: Tokenizer) -> None:
        """Refuse a shard written with a different tokenizer than the run's."""
        mine = tokenizer.describe()
        if (self.tokenizer.get("fingerprint"), self.tokenizer.get("eos_id")) != (mine["fingerprint"], mine["eos_id"]):
            raise ZayaTrainError(
                f"shard {self.path} was tokenized with {self.tokenizer}, but the run uses {mine}; "
                "re-prepare the shard or configure the matching train.data.tokenizer"
            )
