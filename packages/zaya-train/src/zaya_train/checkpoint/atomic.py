"""Crash-safe file primitives: a file or folder is either absent or complete, never half written.

A rename is atomic on POSIX file systems, but only durable once the data and the parent folder are
fsynced; without the folder fsync a power loss can bring back the old name.
"""

import os
from pathlib import Path


def fsync_path(path: Path) -> None:
    """Flush a file's or folder's data and metadata to stable storage."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write `data` to `path` through a temporary name in the same folder, fsync, rename, fsync the folder."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    with open(tmp, "wb") as stream:
        stream.write(data)
        stream.flush()
        os.fsync(stream.fileno())
    os.replace(tmp, path)
    fsync_path(path.parent)


def atomic_write_text(path: Path, text: str) -> None:
    """Text version of `atomic_write_bytes` (UTF-8)."""
    atomic_write_bytes(path, text.encode("utf-8"))


def durable_rename(src: Path, dst: Path) -> None:
    """Rename `src` to `dst` (same folder) and make the new name survive a power loss."""
    os.rename(src, dst)
    fsync_path(Path(dst).parent)
