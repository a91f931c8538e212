"""Byte-range streaming: move a tensor whose bytes are unchanged by the conversion without materialising it.

Most reshapes and conversions cut tensors along dim 0 only (FSDP shards, expert ranges, pipeline stages,
fused q|k|v sections), and every format stores a tensor, or each of its pieces, as one row-major run of
bytes. Then a tensor is a list of source *extents* (file ranges in logical order) and the target a list of
*targets* (file ranges, each holding a logical byte range), and the conversion is a copy of byte ranges:
- the caller's thread copies each range file to file with `copy_file_range` (no copy through user memory;
  `pread`/`pwrite` through one reused buffer where the kernel refuses, e.g. across file systems), and (for a
  durable conversion) asks the kernel to start writing each range to disk at once (`sync_file_range`), so the
  fsync at the end of the conversion has little left to wait for;
- meanwhile a hasher thread computes the tensor's checksum from the source's pages mapped read-only, a
  window at a time (hashers and copies release the GIL).
The two meet once per tensor: on a shared, loaded machine every cross-thread hand-off costs a scheduling delay,
so there are as few as possible. Memory stays at one mapped window whatever the tensor's size. Tensors that do
not fit this (TP cuts along other dims, non-contiguous chunks, zarr chunks of partial rows) move a block of rows
at a time instead (`row_blocks`).
"""

from __future__ import annotations

import bisect
import ctypes
import mmap
import os
from concurrent.futures import ThreadPoolExecutor

from ckpt_reshape.byte_ranges import Extent, Target, check_extents
from ckpt_reshape.checksums import new_hasher
from ckpt_reshape.errors import ReshapeError
from ckpt_reshape.index import TensorMeta

# Bytes per pwrite call, and per copy_file_range call and writeback request in a durable conversion: starting
# the disk writes every 8 MB beat 64 MB and a final fsync alone. Without writeback a range goes to the kernel in
# one call, as `cp` does: 8 MB calls measured ~35% slower than that (interleaved runs, 2.3 GB, ext4 on virtio).
COPY_CHUNK = 8 << 20
HASH_WINDOW = 16 << 20  # bytes of the source mapped at a time by the hasher


class StreamCopier:
    """Copies tensors' byte ranges file to file while a second thread checksums them."""

    def __init__(self, copy_chunk: int = COPY_CHUNK, hash_window: int = HASH_WINDOW, writeback: bool = True) -> None:
        self.copy_chunk, self.hash_window = copy_chunk, hash_window
        self.writeback = writeback  # start disk writes as ranges are copied (for a durable conversion's fsync)
        self.kernel_copy = hasattr(os, "copy_file_range")  # cleared after the first file pair that refuses it
        self._buffer: bytearray | None = None  # for pread/pwrite, allocated on first need
        self._hasher = ThreadPoolExecutor(1, thread_name_prefix="ckpt-stream-hash")

    def close(self) -> None:
        """Stop the hasher thread."""
        self._hasher.shutdown(wait=True)

    def copy(self, meta: TensorMeta, extents: list[Extent], targets: list[Target]) -> str:
        """Copy tensor `meta`'s bytes from `extents` to `targets`; returns the hex checksum of its bytes."""
        name = meta.name
        check_extents(meta, extents)  # a mapping past the end of a file is SIGBUS, not an error: check first
        digest = new_hasher()
        hashed = self._hasher.submit(hash_extents, extents, digest, self.hash_window)
        try:
            starts = [0]
            for extent in extents[:-1]:
                starts.append(starts[-1] + extent.length)
            for target in targets:
                pos, end = target.start, target.start + target.length
                i = bisect.bisect_right(starts, pos) - 1
                while pos < end:
                    extent, within = extents[i], pos - starts[i]
                    length = min(end - pos, extent.length - within)
                    self._copy_range(
                        name, extent, extent.offset + within, target.fd, target.offset + pos - target.start, length
                    )
                    pos += length
                    i += 1
        finally:
            error = hashed.exception()  # always wait: the hasher must be done with the files before they close
        if error is not None:
            raise error
        return digest.hexdigest()

    def _copy_range(self, name: str, extent: Extent, src: int, fd: int, dst: int, length: int) -> None:
        done = 0
        while done < length:
            n = min(self.copy_chunk, length - done)
            if self.kernel_copy:
                if not self.writeback:
                    n = length - done  # the kernel caps a call itself (~2 GB) and says how much it copied
                try:
                    got = os.copy_file_range(extent.fd, fd, n, src + done, dst + done)
                except OSError:  # e.g. EXDEV across file systems: through user memory from here on
                    self.kernel_copy = False
                    continue
            else:
                if self._buffer is None:
                    self._buffer = bytearray(self.copy_chunk)
                view = memoryview(self._buffer)[:n]
                got = os.preadv(extent.fd, [view], src + done)
                written = 0
                while written < got:
                    written += os.pwrite(fd, view[written:got], dst + done + written)
            if got <= 0:
                raise ReshapeError(
                    f"{extent.path}: file ends at byte {src + done}, tensor {name!r} needs {length - done} more "
                    "(truncated)"
                )
            if self.writeback:
                start_writeback(fd, dst + done, got)
            done += got


def hash_extents(extents: list[Extent], digest, window: int) -> None:
    """Feed the extents' bytes to `digest` in order, from read-only mappings of a window at a time."""
    for extent in extents:
        pos, end = extent.offset, extent.offset + extent.length
        while pos < end:
            base = pos - pos % mmap.ALLOCATIONGRANULARITY
            size = min(end, pos + window) - base
            mapped = mmap.mmap(
                extent.fd,
                size,
                flags=mmap.MAP_SHARED | getattr(mmap, "MAP_POPULATE", 0),
                prot=mmap.PROT_READ,
                offset=base,
            )
            try:
                with memoryview(mapped) as view, view[pos - base :] as part:
                    digest.update(part)
            finally:
                mapped.close()
            pos = base + size


_SYNC_FILE_RANGE_WRITE = 2
_libc = None


def start_writeback(fd: int, offset: int, length: int) -> None:
    """Ask the kernel to start writing a range to disk now (Linux `sync_file_range`), so the fsync at the end
    waits for less and disk writes overlap with the copying; a no-op where it is unavailable."""
    global _libc
    if _libc is None:
        try:
            _libc = ctypes.CDLL(None, use_errno=True).sync_file_range
            _libc.argtypes = (ctypes.c_int, ctypes.c_int64, ctypes.c_int64, ctypes.c_uint)
        except (OSError, AttributeError):
            _libc = False
    if _libc:
        _libc(fd, offset, length, _SYNC_FILE_RANGE_WRITE)
