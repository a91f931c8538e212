"""Token shards in zarr: documents tokenized, each followed by EOS, concatenated into one uint32 array per
split (`train`, `val`) with an index of document start offsets.

Layout of `<name>.zarr`: `train/tokens` and `val/tokens` (uint32, chunked), `train/doc_offsets` and
`val/doc_offsets` (uint64, n_docs + 1 entries), and group attributes describing the tokenizer, so a shard
made with one tokenizer is never read with another. Shards are written under a temporary name and renamed
into place, so a crash never leaves a half shard that looks whole. `zaya data prepare` writes one shard per
datatrove task into a dataset folder (dataset.py); `TokenShard` reads either.
"""

from array import array
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from zaya_train.data.concat_tokens import ConcatTokens
from zaya_train.data.dataset import is_dataset, read_index
from zaya_train.data.tokenizers import Tokenizer
from zaya_train.errors import ZayaTrainError

FORMAT = "zaya-token-shard-v1"
SPLITS = ("train", "val")
IN_MEMORY_LIMIT_BYTES = 1 << 30  # streams smaller than this are read into memory once


class _SplitWriter:
    """Appends documents to one split, flushing to zarr in whole chunks (memory: one chunk per split)."""

    def __init__(self, group, split: str, chunk_tokens: int) -> None:
        self.tokens = group.create_array(f"{split}/tokens", shape=(0,), dtype="uint32", chunks=(chunk_tokens,))
        self.offsets = array("Q", [0])  # 8 bytes a document, not a Python int's 28
        self.buffer: list[np.ndarray] = []
        self.buffered = 0
        self.chunk_tokens = chunk_tokens

    def add(self, ids: np.ndarray) -> None:
        self.buffer.append(ids)
        self.buffered += len(ids)
        self.offsets.append(self.offsets[-1] + len(ids))
        if self.buffered >= self.chunk_tokens:
            self.flush(whole_chunks=True)

    def flush(self, whole_chunks: bool = False) -> None:
        """Append the buffered tokens; with `whole_chunks`, only whole chunks (the rest stays buffered), so no
        append ends inside a chunk that the next one would have to read back, decode and write again."""
        if not self.buffer:
            return
        pending = np.concatenate(self.buffer)
        cut = len(pending) // self.chunk_tokens * self.chunk_tokens if whole_chunks else len(pending)
        if cut:
            self.tokens.append(pending[:cut])
        self.buffer = [pending[cut:]] if cut < len(pending) else []
        self.buffered = len(pending) - cut

    def close(self, group, split: str) -> None:
        self.flush()
        arr = np.frombuffer(self.offsets, dtype=np.uint64)
        offsets = group.create_array(
            f"{split}/doc_offsets", shape=arr.shape, dtype="uint64", chunks=(max(len(arr), 1),)
        )
        offsets[:] = arr


class ShardBuilder:
    """Fills one shard folder (a temporary one: `write_dir_atomic` renames it) document by document.

    Why a builder and not a function over a document list: the datatrove writer step feeds it from a stream.
    """

    def __init__(self, folder: Path, tokenizer: dict, chunk_tokens: int = 1 << 16) -> None:
        import zarr

        self.group = zarr.open_group(str(folder), mode="w")
        self.tokenizer = tokenizer
        self.writers = {split: _SplitWriter(self.group, split, chunk_tokens) for split in SPLITS}

    def add(self, ids: np.ndarray, split: str) -> None:
        """Append one document's ids (EOS already at its end) to `split`."""
        self.writers[split].add(ids)

    def close(self) -> dict:
        """Write the offsets and the attributes; returns them (num_docs, num_tokens per split)."""
        for split, writer in self.writers.items():
            writer.close(self.group, split)
        attrs = {
            "format": FORMAT,
            "tokenizer": self.tokenizer,
            "num_docs": {s: len(w.offsets) - 1 for s, w in self.writers.items()},
            "num_tokens": {s: int(w.offsets[-1]) for s, w in self.writers.items()},
        }
        self.group.attrs.update(attrs)
        return attrs


def check_ids(ids: np.ndarray, vocab_size: int) -> None:
    """Refuse ids outside the tokenizer's vocabulary (a tokenizer.json whose added tokens lie past it)."""
    if ids.size and int(ids.max()) >= vocab_size:
        raise ZayaTrainError(f"tokenizer produced id {int(ids.max())} >= its vocab_size {vocab_size}")


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

    def window_documents(self, index: int, seq_len: int) -> np.ndarray:
        """The document index (from `doc_offsets`) of each token of `window(index, seq_len)`, int64."""
        start = index * seq_len
        positions = np.arange(start, min(start + seq_len + 1, self.num_tokens), dtype=self.doc_offsets.dtype)
        return np.searchsorted(self.doc_offsets, positions, side="right").astype(np.int64) - 1


class TokenShard:
    """A prepared shard, or a prepared dataset (dataset.py: one shard per task), opened for reading: each
    split is one stream, the shards concatenated in task order."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        if not self.path.is_dir():
            raise ZayaTrainError(f"token shard {self.path} does not exist; run `zaya data prepare` to make it")
        if is_dataset(self.path):
            index = read_index(self.path)
            self._groups = [_open_shard(self.path / entry["path"]) for entry in index["shards"]]
            attrs = index
        else:
            group = _open_shard(self.path)
            self._groups, attrs = [group], dict(group.attrs)
        self.tokenizer: dict = attrs["tokenizer"]
        self.num_tokens: dict[str, int] = attrs["num_tokens"]
        self.num_docs: dict[str, int] = attrs["num_docs"]

    def split(self, name: str) -> TokenStream:
        """The `train` or `val` stream (in memory when small enough, else read from zarr per window)."""
        parts = [group[f"{name}/tokens"] for group in self._groups]
        offsets, base = [np.zeros(1, dtype=np.uint64)], 0
        for group in self._groups:
            own = np.asarray(group[f"{name}/doc_offsets"][:])
            offsets.append(own[1:] + np.uint64(base))
            base += int(own[-1])
        if base * 4 <= IN_MEMORY_LIMIT_BYTES:
            tokens = np.concatenate([np.asarray(p[:]) for p in parts]) if parts else np.zeros(0, np.uint32)
        else:
            tokens = parts[0] if len(parts) == 1 else ConcatTokens(parts)
        return TokenStream(tokens, np.concatenate(offsets))

    def check_tokenizer(self, tokenizer: Tokenizer) -> None:
        """Refuse a shard written with a different tokenizer than the run's."""
        mine = tokenizer.describe()
        if (self.tokenizer.get("fingerprint"), self.tokenizer.get("eos_id")) != (mine["fingerprint"], mine["eos_id"]):
            raise ZayaTrainError(
                f"shard {self.path} was tokenized with {self.tokenizer}, but the run uses {mine}; "
                "re-prepare the shard or configure the matching train.data.tokenizer"
            )


def _open_shard(path: Path):
    """One shard's zarr group, checked to be ours."""
    import zarr

    try:
        group = zarr.open_group(str(path), mode="r")
        attrs = dict(group.attrs)
    except Exception as err:
        raise ZayaTrainError(f"{path} is not a readable zarr token shard: {err}") from None
    if attrs.get("format") != FORMAT:
        raise ZayaTrainError(
            f"{path} is not a zaya token shard (format {attrs.get('format')!r}, "
            f"expected {FORMAT!r}); make it with `zaya data prepare`"
        )
    return group
