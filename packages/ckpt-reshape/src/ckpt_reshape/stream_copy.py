"""Byte-range streaming: move a tensor whose bytes are unchanged by the conversion without materialising it.

Most reshapes and conversions cut tensors along dim 0 only (FSDP shards, expert ranges, pipeline stages,
fused q|k|v sections), and every format stores a tensor, or each of its pieces, as one row-major run of
bytes. Then a tensor is a list of source *extents* (file ranges in logical order) and the target a list of
*targets* (file ranges, each holding a logical byte range), and the conversion is a copy of byte ranges:
fixed-size blocks are read into a few preallocated buffers by a reader thread, hashed (the checksum of the logical
tensor, in order) by a hasher thread and written by the caller's thread, all three overlapping (the GIL is
released in preadv, pwrite and hashlib). Memory stays at the buffers whatever the tensor's size.
Tensors that do not fit this (TP cuts along other dims, non-contiguous chunks, zarr) take the tensor path.
"""

from __future__ import annotations

import bisect
import ctypes
import mmap
import os
from collections import deque
from concurrent.futures import ThreadPoolExecutor

from ckpt_reshape.byte_ranges import Extent, Target
from ckpt_reshape.checksums import new_hasher
from ckpt_reshape.errors import ReshapeError

BLOCK_BYTES = 2 << 20  # measured best of 0.5-32 MB: the hash then reads pages the copy just brought into cache
BUFFERS = 4


class StreamCopier:
    """Copies byte ranges through `BUFFERS` reused blocks with read, hash and write overlapped."""

    def __init__(self, block_bytes: int = BLOCK_BYTES, buffers: int = BUFFERS) -> None:
        self.block_bytes = block_bytes
        self.kernel_copy = hasattr(os, "copy_file_range")  # cleared after the first file pair that refuses it
        self._buffers = [bytearray(block_bytes) for _ in range(buffers)]  # allocated once, reused
        self._reader = ThreadPoolExecutor(1, thread_name_prefix="ckpt-stream-read")
        self._hasher = ThreadPoolExecutor(1, thread_name_prefix="ckpt-stream-hash")
        self._copier = ThreadPoolExecutor(1, thread_name_prefix="ckpt-stream-copy")

    def close(self) -> None:
        """Stop the threads."""
        for pool in (self._reader, self._hasher, self._copier):
            pool.shutdown(wait=True)

    def copy(self, name: str, extents: list[Extent], targets: list[Target], nbytes: int) -> str:
        """Copy tensor `name`'s `nbytes` from `extents` to `targets`; returns the hex checksum of its bytes."""
        if sum(e.length for e in extents) != nbytes:
            raise ReshapeError(
                f"{extents[0].path if extents else '?'}: tensor {name!r} is stored in {sum(e.length for e in extents)} "
                f"bytes, its shape and dtype need {nbytes}; mismatched shape or dtype"
            )
        starts = [0]
        for extent in extents[:-1]:
            starts.append(starts[-1] + extent.length)
        targets = sorted(targets, key=lambda t: t.start)
        target_starts = [t.start for t in targets]
        digest = new_hasher()
        blocks = [(s, min(self.block_bytes, nbytes - s)) for s in range(0, nbytes, self.block_bytes)]
        reads: deque = deque()

        def fetch(i: int):
            if self.kernel_copy:  # the copy goes file to file; the hash reads the source's pages in place
                return self._reader.submit(_map, name, extents, starts, *blocks[i])
            return self._reader.submit(
                self._read, name, extents, starts, *blocks[i], self._buffers[i % len(self._buffers)]
            )

        for i in range(min(len(blocks), len(self._buffers))):
            reads.append(fetch(i))
        for i, (start, length) in enumerate(blocks):
            views = reads.popleft().result()
            try:
                hashed = self._hasher.submit(_hash_views, digest, views)
                if self.kernel_copy:  # two threads, so the kernel's page copying can use two cores
                    half = length // 2
                    first = self._copier.submit(
                        self._copy_in_kernel, name, extents, starts, targets, target_starts, start, half
                    )
                    self._copy_in_kernel(name, extents, starts, targets, target_starts, start + half, length - half)
                    first.result()
                if not self.kernel_copy:  # also when the kernel just refused: write from the views in hand
                    pos = start
                    for view, _ in views:
                        _write(targets, target_starts, pos, view)
                        pos += len(view)
                hashed.result()
            finally:
                _release(views)
            if i + len(self._buffers) < len(blocks):
                reads.append(fetch(i + len(self._buffers)))
        return digest.hexdigest()

    def _copy_in_kernel(self, name, extents, starts, targets, target_starts, start, length) -> None:
        """copy_file_range file to file (no copy through user memory); pwrite from the block if it cannot."""
        end = start + length
        i = max(bisect.bisect_right(target_starts, start) - 1, 0)
        while i < len(targets) and targets[i].start < end:
            target = targets[i]
            pos, hi = max(start, target.start), min(end, target.start + target.length)
            j = bisect.bisect_right(starts, pos) - 1
            while pos < hi:
                extent = extents[j]
                within = pos - starts[j]
                want = min(hi - pos, extent.length - within)
                try:
                    got = os.copy_file_range(
                        extent.fd, target.fd, want, extent.offset + within, target.offset + pos - target.start
                    )
                except OSError:  # e.g. EXDEV across file systems: the caller writes this block from memory
                    self.kernel_copy = False
                    return
                if got <= 0:
                    raise ReshapeError(f"{extent.path}: file ends inside tensor {name!r} (truncated)")
                pos += got
                if got == want:
                    j += 1
            lo = max(start, target.start)
            start_writeback(target.fd, target.offset + lo - target.start, hi - lo)
            i += 1

    @staticmethod
    def _read(name: str, extents: list[Extent], starts: list[int], start: int, length: int, buffer) -> list:
        """Block `[start, start + length)` read into `buffer`, as `_map`'s [(view, None)]."""
        view = memoryview(buffer)[:length]
        done = 0
        i = bisect.bisect_right(starts, start) - 1
        while done < length:
            extent = extents[i]
            within = start + done - starts[i]
            want = min(length - done, extent.length - within)
            got = os.preadv(extent.fd, [view[done : done + want]], extent.offset + within)
            if got <= 0:
                raise ReshapeError(
                    f"{extent.path}: file ends at byte {extent.offset + within}, tensor {name!r} needs "
                    f"{want} more (truncated)"
                )
            done += got
            if got == want:
                i += 1
        return [(view, None)]


def _map(name: str, extents: list[Extent], starts: list[int], start: int, length: int) -> list:
    """Block `[start, start + length)` as read-only views of the source files' pages: [(view, mmap)]."""
    out = []
    i = bisect.bisect_right(starts, start) - 1
    pos, end = start, start + length
    while pos < end:
        extent = extents[i]
        within = pos - starts[i]
        want = min(end - pos, extent.length - within)
        first = extent.offset + within
        if os.fstat(extent.fd).st_size < first + want:  # mapping past the end would be SIGBUS, not an error
            raise ReshapeError(f"{extent.path}: file ends before byte {first + want} of tensor {name!r} (truncated)")
        base = first - first % mmap.ALLOCATIONGRANULARITY
        mapped = mmap.mmap(
            extent.fd,
            first + want - base,
            flags=mmap.MAP_SHARED | getattr(mmap, "MAP_POPULATE", 0),
            prot=mmap.PROT_READ,
            offset=base,
        )
        out.append((memoryview(mapped)[first - base :], mapped))
        pos += want
        i += 1
    return out


def _hash_views(digest, views: list) -> None:
    """Feed a block's views to the hasher in order."""
    for view, _ in views:
        digest.update(view)


def _release(views: list) -> None:
    """Unmap what `_map` mapped (once nothing reads the views any more)."""
    for view, mapped in views:
        if mapped is not None:
            view.release()
            mapped.close()


_SYNC_FILE_RANGE_WRITE = 2
_libc = None


def start_writeback(fd: int, offset: int, length: int) -> None:
    """Ask the kernel to start writing a range to disk now (Linux `sync_file_range`), so the fsync at the end
    waits for less and disk writes overlap with reading and hashing; a no-op where it is unavailable."""
    global _libc
    if _libc is None:
        try:
            _libc = ctypes.CDLL(None, use_errno=True).sync_file_range
            _libc.argtypes = (ctypes.c_int, ctypes.c_int64, ctypes.c_int64, ctypes.c_uint)
        except (OSError, AttributeError):
            _libc = False
    if _libc:
        _libc(fd, offset, length, _SYNC_FILE_RANGE_WRITE)


def _write(targets: list[Target], target_starts: list[int], start: int, view: memoryview) -> None:
    """pwrite the part of block `[start, start + len(view))` that falls into each target."""
    end = start + len(view)
    i = max(bisect.bisect_right(target_starts, start) - 1, 0)
    while i < len(targets) and targets[i].start < end:
        target = targets[i]
        lo, hi = max(start, target.start), min(end, target.start + target.length)
        pos = 0
        while lo + pos < hi:
            pos += os.pwrite(target.fd, view[lo - start + pos : hi - start], target.offset + lo - target.start + pos)
        start_writeback(target.fd, target.offset + lo - target.start, hi - lo)
        i += 1
