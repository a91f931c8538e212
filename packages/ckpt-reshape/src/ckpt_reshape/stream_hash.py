"""Checksums and differences of logical tensors read the way `convert` moves them, never whole.

`verify` and `compare` must be usable on the checkpoints `convert` handles, so they cost no more memory than
a conversion: a tensor stored as row-major byte ranges is hashed from the file's pages mapped a window at a
time (as `stream_copy` does); one that a reader can serve by rows is hashed a block of rows at a time (as
`row_blocks` does); only what neither can serve (scalars, strided records) is read whole.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ckpt_reshape.byte_ranges import check_extents
from ckpt_reshape.checksums import DEFAULT_ALGORITHM, new_hasher, tensor_checksum
from ckpt_reshape.formats.base import CheckpointReader
from ckpt_reshape.stream_copy import HASH_WINDOW, hash_extents
from ckpt_reshape.torch_zip import byte_view

if TYPE_CHECKING:
    from ckpt_reshape.row_blocks import RowReader


def _row_reader(reader: CheckpointReader, name: str) -> RowReader | None:
    meta = reader.index.tensors[name]
    return reader.row_reader(name) if meta.shape and meta.shape[0] and meta.nbytes else None


def stream_checksum(reader: CheckpointReader, name: str, algorithm: str = DEFAULT_ALGORITHM) -> str:
    """Hex checksum of tensor `name`'s row-major bytes, read a window or a block of rows at a time."""
    meta = reader.index.require(name, str(reader.path))
    extents = reader.byte_extents(name) if meta.shape and meta.nbytes else None
    if extents is not None:
        check_extents(meta, extents)  # a mapping past the end of a file is SIGBUS, not an error: check first
        digest = new_hasher(algorithm)
        hash_extents(extents, digest, HASH_WINDOW)
        return digest.hexdigest()
    rows = _row_reader(reader, name)
    if rows is None:
        return tensor_checksum(reader.read_tensor(name), algorithm)
    digest = new_hasher(algorithm)
    from ckpt_reshape.row_blocks import rows_per_block  # row_blocks imports torch

    step = rows_per_block(meta)
    for start in range(0, meta.shape[0], step):
        digest.update(memoryview(byte_view(rows(start, min(start + step, meta.shape[0])))))
    return digest.hexdigest()


def max_abs_difference(a: CheckpointReader, b: CheckpointReader, name: str) -> float | str:
    """Largest absolute difference between tensor `name` in `a` and in `b` (same shape and dtype), a block of
    rows at a time where both can serve rows; "n/a" for non-floating dtypes."""
    meta = a.index.tensors[name]
    if not meta.dtype.is_floating_point:
        return "n/a"
    rows_a, rows_b = _row_reader(a, name), _row_reader(b, name)
    if rows_a is None or rows_b is None:
        return (a.read_tensor(name).double() - b.read_tensor(name).double()).abs().max().item()
    from ckpt_reshape.row_blocks import rows_per_block

    worst, step = 0.0, rows_per_block(meta)
    for start in range(0, meta.shape[0], step):
        stop = min(start + step, meta.shape[0])
        block = (rows_a(start, stop).double() - rows_b(start, stop).double()).abs()
        worst = max(worst, block.max().item() if block.numel() else 0.0)
    return worst
