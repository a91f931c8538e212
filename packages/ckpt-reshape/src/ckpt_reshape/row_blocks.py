"""Row-block streaming: tensors whose bytes the conversion must rearrange, moved a block of rows at a time.

A TP cut along dim 1 (row-parallel weights), on either side of a conversion, or a zarr source not chunked in
whole rows, means the target's bytes are not a run of the source's, so `stream_copy` cannot move them file to
file. They still never need the whole tensor in memory: every format stores each piece of a tensor row-major, so
the rows `[a, b)` of the logical tensor (its dim 0) are one run inside every piece that holds them. A conversion
therefore reads one block of rows at a time (about `BLOCK_BYTES`, gathered from however many source pieces hold
it), hashes it in another thread while each target piece's part of it is written, and moves on. Memory is one
block plus one piece's slice of it, whatever the tensor's size.

Readers offer `row_reader(name)` and writers `row_writer(name)` (see `formats.base`); this module holds the
loop and the extent arithmetic they share.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import torch

from ckpt_reshape.byte_ranges import Extent, check_extents
from ckpt_reshape.checksums import new_hasher
from ckpt_reshape.index import TensorMeta
from ckpt_reshape.torch_zip import byte_view, pread_into, pwrite_from

BLOCK_BYTES = 32 << 20  # rows gathered per step; a few MB already amortise the per-piece system calls

RowReader = Callable[[int, int], torch.Tensor]  # (start, stop) -> rows [start, stop) as one contiguous tensor
RowWriter = Callable[[int, torch.Tensor], None]  # (start, rows) -> store rows [start, start + len(rows))


def row_bytes(meta: TensorMeta) -> int:
    """Bytes of one dim-0 row of a tensor with at least one dim."""
    n = meta.dtype.itemsize
    for size in meta.shape[1:]:
        n *= size
    return n


def rows_per_block(meta: TensorMeta, granule: int = 1, block_bytes: int | None = None) -> int:
    """Rows per block: about `block_bytes` (default `BLOCK_BYTES`), a multiple of `granule` (e.g. a zarr chunk's
    rows), at least one."""
    rows = max(1, (block_bytes or BLOCK_BYTES) // max(row_bytes(meta), 1))
    granule = max(granule, 1)
    return max(granule, rows // granule * granule)


def extent_row_reader(meta: TensorMeta, extents: list[Extent]) -> RowReader:
    """Rows of a tensor whose row-major bytes lie in `extents` (in logical order), read with `pread`."""
    check_extents(meta, extents)
    per_row = row_bytes(meta)
    starts = [0]
    for extent in extents:
        starts.append(starts[-1] + extent.length)

    def read(start: int, stop: int) -> torch.Tensor:
        out = torch.empty((stop - start, *meta.shape[1:]), dtype=meta.dtype)
        flat = out.reshape(-1).view(torch.uint8)
        lo, hi = start * per_row, stop * per_row
        for extent, begin, end in zip(extents, starts, starts[1:], strict=False):
            a, b = max(lo, begin), min(hi, end)
            if a < b:
                pread_into(extent.fd, extent.offset + a - begin, flat[a - lo : b - lo], extent.path)
        return out

    return read


def chunk_row_reader(meta: TensorMeta, chunks: list[tuple[tuple[int, ...], tuple[int, ...], Extent]]) -> RowReader:
    """Rows of a tensor stored as boxes `(offsets, sizes, extent)`, each box row-major in its extent: rows
    `[a, b)` of a box are one run of it, so a block costs one `pread` per box that holds some of its rows."""
    for _, sizes, extent in chunks:
        check_extents(TensorMeta(meta.name, sizes, meta.dtype), [extent])

    def read(start: int, stop: int) -> torch.Tensor:
        out = torch.empty((stop - start, *meta.shape[1:]), dtype=meta.dtype)
        for offsets, sizes, extent in chunks:
            lo, hi = max(start, offsets[0]), min(stop, offsets[0] + sizes[0])
            if lo >= hi:
                continue
            part = torch.empty((hi - lo, *sizes[1:]), dtype=meta.dtype)
            box_row = row_bytes(TensorMeta(meta.name, sizes, meta.dtype))
            pread_into(extent.fd, extent.offset + (lo - offsets[0]) * box_row, part, extent.path)
            inner = tuple(slice(o, o + n) for o, n in zip(offsets[1:], sizes[1:], strict=True))
            out[(slice(lo - start, hi - start), *inner)] = part
        return out

    return read


def piece_row_writer(meta: TensorMeta, slots: list[tuple[tuple[int, ...], tuple[int, ...], int, int]]) -> RowWriter:
    """Store blocks of rows into boxes `(offsets, sizes, fd, data offset)`, each stored row-major at its offset:
    one `pwrite` per box and block (a box's slice of a block is copied contiguous first)."""

    def write(start: int, rows: torch.Tensor) -> None:
        stop = start + rows.shape[0]
        for offsets, sizes, fd, offset in slots:
            lo, hi = max(start, offsets[0]), min(stop, offsets[0] + sizes[0])
            if lo >= hi:
                continue
            inner = tuple(slice(o, o + n) for o, n in zip(offsets[1:], sizes[1:], strict=True))
            box_row = row_bytes(TensorMeta(meta.name, sizes, meta.dtype))
            pwrite_from(fd, offset + (lo - offsets[0]) * box_row, rows[(slice(lo - start, hi - start), *inner)])

    return write


def copy_rows(meta: TensorMeta, read: RowReader, write: RowWriter, hasher: ThreadPoolExecutor, granule: int = 1) -> str:
    """Move tensor `meta` block by block from `read` to `write`; returns the checksum of its row-major bytes."""
    digest = new_hasher()
    step = rows_per_block(meta, granule)
    for start in range(0, meta.shape[0], step):
        block = read(start, min(start + step, meta.shape[0]))
        hashed = hasher.submit(digest.update, memoryview(byte_view(block)))  # in order: one block at a time
        try:
            write(start, block)
        finally:
            hashed.result()
    return digest.hexdigest()
