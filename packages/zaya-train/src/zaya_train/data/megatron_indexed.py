"""Megatron's indexed dataset (`<prefix>.bin` + `<prefix>.idx`), read by numpy memmap and written atomically,
so a Megatron user's tokenized corpus trains here as it is, and ours goes to Megatron, with no re-tokenizing.

The format, as megatron-core 0.16.1 writes it (`IndexedDatasetBuilder` and `_IndexWriter` in
`megatron/core/datasets/indexed_dataset.py`, NVIDIA/Megatron-LM; read there, not imported at run time):

- `.bin`: every sequence's token ids back to back, in the dataset's dtype, no header.
- `.idx`, little-endian: the 9 bytes `MMIDIDX\\x00\\x00`; version, uint64, 1; the dtype code, uint8
  (1 uint8, 2 int8, 3 int16, 4 int32, 5 int64, 6 float64, 7 float32, 8 uint16); the sequence count S, uint64;
  the document count D, uint64 (D = documents + 1: the document indices start at 0); the sequence lengths,
  int32[S]; the sequence pointers (byte offsets into `.bin`), int64[S]; the document indices (the sequence index
  where each document starts, then S), int64[D]; multimodal datasets add one int8 mode per sequence.

A document is its sequences' tokens together (one sequence per document unless Megatron split sentences).
We write one sequence per document, in uint16 when the vocabulary has fewer than 65500 ids and int32 else
(Megatron's `DType.optimal_dtype`). Every inconsistency (magic, version, dtype code, sizes, a `.bin` shorter
than the index says) is one `ZayaTrainError` line naming the file.
"""

import os
import struct
from array import array
from collections.abc import Iterable, Iterator
from pathlib import Path

import numpy as np
from zaya_config.atomic import atomic_output, fsync_path

from zaya_train.errors import ZayaTrainError

MAGIC = b"MMIDIDX\x00\x00"
VERSION = 1
HEADER = struct.Struct("<9sQBQQ")  # magic, version, dtype code, sequence count, document count
DTYPES = {1: np.uint8, 2: np.int8, 3: np.int16, 4: np.int32, 5: np.int64, 6: np.float64, 7: np.float32, 8: np.uint16}
CODES = {np.dtype(t): code for code, t in DTYPES.items()}
TOKEN_DTYPES = (np.uint8, np.int8, np.int16, np.int32, np.int64, np.uint16)  # integer dtypes can hold token ids


def megatron_prefix(path: Path | str) -> Path:
    """The prefix a path names: `x.bin` and `x.idx` name `x`, anything else is the prefix itself."""
    path = Path(path)
    return path.with_suffix("") if path.suffix in (".bin", ".idx") else path


def bin_path(prefix: Path | str) -> Path:
    """`<prefix>.bin` (Megatron's `get_bin_path`)."""
    return Path(f"{megatron_prefix(prefix)}.bin")


def idx_path(prefix: Path | str) -> Path:
    """`<prefix>.idx` (Megatron's `get_idx_path`)."""
    return Path(f"{megatron_prefix(prefix)}.idx")


def is_megatron_prefix(path: Path | str) -> bool:
    """Whether `path` names a Megatron dataset: `<prefix>.bin` or `<prefix>.idx` exists (checked whole on open)."""
    return bin_path(path).is_file() or idx_path(path).is_file()


def token_dtype(vocab_size: int) -> np.dtype:
    """The dtype we write ids below `vocab_size` in (Megatron's choice: uint16 under 65500 ids, else int32)."""
    return np.dtype(np.uint16 if vocab_size < 65500 else np.int32)


class MegatronIndexed:
    """A Megatron `.bin/.idx` pair opened read-only: memory-mapped tokens and each document's token offsets."""

    def __init__(self, prefix: Path | str) -> None:
        self.prefix = megatron_prefix(prefix)
        idx, binary = idx_path(self.prefix), bin_path(self.prefix)
        for path in (idx, binary):
            if not path.is_file():
                raise ZayaTrainError(
                    f"Megatron dataset {self.prefix}: {path} is missing; a prefix needs both {idx.name} and {binary.name}"
                )
        size = idx.stat().st_size
        with idx.open("rb") as handle:
            head = handle.read(HEADER.size)
        if len(head) < HEADER.size or head[:9] != MAGIC:
            raise ZayaTrainError(
                f"{idx} is not a Megatron index (no {MAGIC!r} header); is it an .idx of IndexedDataset?"
            )
        _, version, code, sequences, documents = HEADER.unpack(head)
        if version != VERSION:
            raise ZayaTrainError(f"{idx}: index version {version}, only version {VERSION} is known")
        if code not in DTYPES or DTYPES[code] not in TOKEN_DTYPES:
            raise ZayaTrainError(f"{idx}: dtype code {code} is not an integer token dtype (known: {sorted(DTYPES)})")
        expected = HEADER.size + sequences * 12 + documents * 8
        if size not in (expected, expected + sequences):  # + one int8 mode per sequence when multimodal
            raise ZayaTrainError(
                f"{idx}: {size} bytes, but {sequences} sequences and {documents} document indices need {expected}; "
                "the index is truncated or corrupt"
            )
        self.dtype = np.dtype(DTYPES[code])
        raw = np.memmap(idx, mode="r", dtype=np.uint8)
        lengths = np.frombuffer(raw, np.int32, sequences, HEADER.size)
        pointers = np.frombuffer(raw, np.int64, sequences, HEADER.size + 4 * sequences)
        doc_index = np.frombuffer(raw, np.int64, documents, HEADER.size + 12 * sequences)
        starts = np.concatenate([[0], np.cumsum(lengths, dtype=np.int64)])
        if (
            documents < 1
            or doc_index[0] != 0
            or doc_index[-1] != sequences
            or (np.diff(doc_index) < 0).any()
            or (lengths < 0).any()
            or not np.array_equal(pointers, starts[:-1] * self.dtype.itemsize)
        ):
            raise ZayaTrainError(
                f"{idx}: inconsistent sequence lengths, pointers or document indices; the index is corrupt"
            )
        self.num_tokens = int(starts[-1])
        have = binary.stat().st_size
        if have != self.num_tokens * self.dtype.itemsize:
            state = "truncated" if have < self.num_tokens * self.dtype.itemsize else "longer than its index"
            raise ZayaTrainError(
                f"{binary}: {have} bytes, but {idx.name} indexes {self.num_tokens} {self.dtype} tokens "
                f"({self.num_tokens * self.dtype.itemsize} bytes); the .bin is {state}"
            )
        self.doc_offsets = starts[doc_index]  # token offset of each document's start, then the end
        self.tokens = np.memmap(binary, mode="r", dtype=self.dtype) if self.num_tokens else np.zeros(0, self.dtype)

    @property
    def num_documents(self) -> int:
        return len(self.doc_offsets) - 1

    def document(self, index: int) -> np.ndarray:
        """Document `index`'s token ids (a view of the memory map)."""
        return self.tokens[self.doc_offsets[index] : self.doc_offsets[index + 1]]

    def documents(self) -> Iterator[np.ndarray]:
        """Every document's ids in order."""
        for index in range(self.num_documents):
            yield self.document(index)

    def max_id(self, block_tokens: int = 1 << 24) -> int:
        """The largest id (read block by block, so a large `.bin` is never loaded whole); -1 when empty."""
        return max(
            (int(self.tokens[s : s + block_tokens].max()) for s in range(0, self.num_tokens, block_tokens)), default=-1
        )


def write_megatron(
    prefix: Path | str, documents: Iterable[np.ndarray], dtype: np.dtype, *, durable: bool = True
) -> Path:
    """Write `documents` (arrays of ids) as `<prefix>.bin/.idx`, one sequence each, streamed; returns the prefix.

    Both files are built under temporary names; the `.bin` is renamed into place first and the `.idx` last
    (an older `.idx` is removed before), so a crash leaves no pair that reads as whole but is not.
    """
    prefix, dtype = megatron_prefix(prefix), np.dtype(dtype)
    if dtype not in CODES or dtype.type not in TOKEN_DTYPES:
        raise ZayaTrainError(f"dtype {dtype} is not a Megatron token dtype (uint8, int8, int16, int32, int64, uint16)")
    info = np.iinfo(dtype)
    prefix.parent.mkdir(parents=True, exist_ok=True)
    lengths = array("q")
    with (
        atomic_output(idx_path(prefix), durable=durable) as tmp_idx,
        atomic_output(bin_path(prefix), durable=durable) as tmp_bin,
    ):
        with tmp_bin.open("wb") as out:
            for ids in documents:
                ids = np.asarray(ids)
                if ids.size and (int(ids.min()) < info.min or int(ids.max()) > info.max):
                    raise ZayaTrainError(
                        f"document {len(lengths)}: ids {int(ids.min())}..{int(ids.max())} do not fit {dtype}"
                    )
                out.write(ids.astype(dtype, copy=False).tobytes(order="C"))
                lengths.append(ids.size)
            if durable:
                out.flush()
                os.fsync(out.fileno())
        count = len(lengths)
        if max(lengths, default=0) > np.iinfo(np.int32).max:
            raise ZayaTrainError(f"a document of {max(lengths)} tokens is longer than Megatron's int32 sequence length")
        lens = np.frombuffer(lengths, dtype=np.int64)
        pointers = np.concatenate([[0], np.cumsum(lens)[:-1]]).astype(np.int64) * dtype.itemsize if count else lens
        with tmp_idx.open("wb") as out:
            out.write(HEADER.pack(MAGIC, VERSION, CODES[dtype], count, count + 1))
            out.write(lens.astype(np.int32).tobytes())
            out.write(pointers.astype(np.int64).tobytes())
            out.write(np.arange(count + 1, dtype=np.int64).tobytes())
        if durable:
            fsync_path(tmp_idx)
        idx_path(prefix).unlink(missing_ok=True)
    return prefix
