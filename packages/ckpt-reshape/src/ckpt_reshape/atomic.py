"""Output appears all at once or not at all: build under a temporary name in the destination's folder, fsync,
rename. An existing destination is replaced only with `force`, and then by a rename too, so a crash leaves
either the old or the new checkpoint, never a mix.

Without durability (`durable=False`, like `cp`) the rename still publishes the output whole to every other
process, but its data may still be in the page cache: an OS crash or power loss soon after can leave files
with missing data under the final name, which `zaya ckpt verify` detects from the recorded checksums.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ckpt_reshape.errors import ReshapeError
from ckpt_reshape.formats.base import fsync_path


def check_destination(dst: Path, force: bool, src: Path | None = None) -> None:
    """Refuse to overwrite without `force`, and refuse to write over the source in any case."""
    dst = Path(dst)
    if src is not None and dst.resolve() == Path(src).resolve():
        raise ReshapeError(f"{dst}: destination is the source; the source is never modified, pick another path")
    if dst.exists() and not force:
        raise ReshapeError(f"{dst}: already exists; pass --force to replace it")
    if not dst.parent.is_dir():
        raise ReshapeError(f"{dst.parent}: destination's parent folder does not exist")


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    elif path.exists() or path.is_symlink():
        path.unlink()


@contextmanager
def atomic_output(dst: Path, force: bool, durable: bool = True) -> Iterator[Path]:
    """Yield a temporary path next to `dst`; on success rename it to `dst` (and fsync the folder when `durable`),
    on failure delete it."""
    dst = Path(dst)
    tmp = dst.parent / f".tmp.{dst.name}.{os.getpid()}"
    _remove(tmp)
    try:
        yield tmp
        if dst.exists():
            if not force:
                raise ReshapeError(f"{dst}: appeared while converting; pass --force to replace it")
            old = dst.parent / f".old.{dst.name}.{os.getpid()}"
            os.replace(dst, old)
            os.replace(tmp, dst)
            _remove(old)
        else:
            os.replace(tmp, dst)
        if durable:
            fsync_path(dst.parent)
    except BaseException:
        _remove(tmp)
        raise
