"""Crash-safe writes: a file or folder is either absent, the old one, or complete, never half written.

Write under a temporary name in the same folder (so the rename cannot cross file systems), fsync the
data, rename over the target, then fsync the folder: a rename is atomic on POSIX, but only durable once
the folder entry is flushed too. Stdlib only, and importable without Hydra (the package `__init__`
resolves its exports lazily), so GPU benchmark scripts on machines without Hydra can use it.
"""

import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

FILE_MODE = 0o644  # mkstemp creates 0600; results, caches and checkpoints are meant to be shared


def fsync_path(path: str | Path) -> None:
    """Flush a file's or folder's data and metadata to stable storage."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_atomic(path: str | Path, write: Callable[[BinaryIO], object]) -> Path:
    """Call `write(handle)` on a temporary file beside `path`, fsync it, rename it into place; return `path`.

    If `write` raises, the temporary file is removed and an existing file at `path` is left untouched.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            write(handle)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, FILE_MODE)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    fsync_path(path.parent)
    return path


def write_bytes_atomic(path: str | Path, data: bytes) -> Path:
    """Write `data` to `path` atomically; return `path`."""
    return write_atomic(path, lambda handle: handle.write(data))


def write_text_atomic(path: str | Path, text: str) -> Path:
    """Write `text` to `path` atomically as UTF-8; return `path`."""
    return write_bytes_atomic(path, text.encode("utf-8"))


def _fsync_tree(root: Path) -> None:
    """fsync every file and folder under `root` (folders after their contents)."""
    for folder, _dirs, files in os.walk(root, topdown=False):
        for name in files:
            fsync_path(os.path.join(folder, name))
        fsync_path(folder)


def write_dir_atomic(path: str | Path, fill: Callable[[Path], object]) -> Path:
    """Build a folder (a zarr store, a checkpoint) with `fill(tmp)` beside `path`, then swap it into place.

    If `fill` raises, the temporary folder is removed and an existing folder at `path` is left untouched.
    Replacing an existing folder takes two renames; a crash between them leaves the old copy under
    `.<name>.old` beside `path`.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent))
    try:
        fill(tmp)
        _fsync_tree(tmp)
        if path.exists():
            old = path.with_name(f".{path.name}.old")
            shutil.rmtree(old, ignore_errors=True)
            os.replace(path, old)
            os.replace(tmp, path)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.replace(tmp, path)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    fsync_path(path.parent)
    return path
