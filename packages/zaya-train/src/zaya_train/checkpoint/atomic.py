"""Crash-safe file primitives: a file or folder is either absent or complete, never half written.

The atomic writes are `zaya_config.atomic` (one implementation for the monorepo), re-exported under
the names the checkpoint code uses. A rename is atomic on POSIX file systems, but only durable once the
data and the parent folder are fsynced; without the folder fsync a power loss can bring back the old name.
"""

import os
from pathlib import Path

from zaya_config.atomic import fsync_path
from zaya_config.atomic import write_bytes_atomic as atomic_write_bytes
from zaya_config.atomic import write_text_atomic as atomic_write_text

__all__ = ["atomic_write_bytes", "atomic_write_text", "durable_rename", "fsync_path"]


def durable_rename(src: Path, dst: Path) -> None:
    """Rename `src` to `dst` (same folder) and make the new name survive a power loss."""
    os.rename(src, dst)
    fsync_path(Path(dst).parent)
