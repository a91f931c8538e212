"""Byte ranges of logical tensors in files: what a reader can hand over and a writer can take without the
tensor ever being materialised (see `stream_copy`)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from ckpt_reshape.errors import ReshapeError
from ckpt_reshape.index import TensorMeta


@dataclass(frozen=True)
class Extent:
    """`length` bytes of the logical tensor stored at `offset` of the open file `fd` (`path`, for messages)."""

    fd: int
    offset: int
    length: int
    path: Path


@dataclass(frozen=True)
class Target:
    """Logical bytes `[start, start + length)` of a tensor go to `offset` of the open file `fd`."""

    fd: int
    offset: int
    start: int
    length: int


def contiguous_start(shape: tuple[int, ...], offsets: tuple[int, ...], sizes: tuple[int, ...]) -> int | None:
    """Element index where the box `offsets + sizes` starts if it is one row-major run of `shape`, else None."""
    k = len(shape)
    while k > 0 and sizes[k - 1] == shape[k - 1]:
        k -= 1
    # dims >= k are whole; dim k - 1 may be partial; every dim before it must have size 1
    if any(s != 1 for s in sizes[: max(k - 1, 0)]):
        return None
    start, stride = 0, 1
    for size, offset in zip(reversed(shape), reversed(offsets), strict=True):
        start += offset * stride
        stride *= size
    return start


def check_extents(meta: TensorMeta, extents: list[Extent]) -> None:
    """Refuse extents that do not hold exactly the tensor's bytes, or that run past the end of their file."""
    stored = sum(e.length for e in extents)
    if stored != meta.nbytes:
        raise ReshapeError(
            f"{extents[0].path if extents else '?'}: tensor {meta.name!r} is stored in {stored} bytes, its shape "
            f"and dtype need {meta.nbytes}; mismatched shape or dtype"
        )
    for extent in extents:
        if os.fstat(extent.fd).st_size < extent.offset + extent.length:
            raise ReshapeError(
                f"{extent.path}: file ends before byte {extent.offset + extent.length} of tensor {meta.name!r} "
                "(truncated)"
            )
