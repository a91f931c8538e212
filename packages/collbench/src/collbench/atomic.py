"""Atomic writes: a temporary name in the same folder, fsync, rename, so readers never see half a file."""

import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path


def write_text_atomic(path: Path, text: str) -> Path:
    """Write `text` to `path` atomically."""
    return write_bytes_atomic(path, text.encode())


def write_bytes_atomic(path: Path, data: bytes) -> Path:
    """Write `data` to `path` atomically."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def write_dir_atomic(path: Path, fill: Callable[[Path], None]) -> Path:
    """Build a folder (a zarr store) under a temporary name beside `path`, then swap it into place."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent))
    try:
        fill(tmp)
        for root, _dirs, files in os.walk(tmp):
            for name in files:
                with open(os.path.join(root, name), "rb") as fh:
                    os.fsync(fh.fileno())
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
    return path
