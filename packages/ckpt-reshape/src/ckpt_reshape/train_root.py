"""A zaya-train checkpoint root as a path: its `latest` pointer stands for the newest committed step folder.

Its own module so that the formats (which open a root) and the ZAYA run reader (which needs the step folder's
trained model) both import it without importing each other.
"""

from __future__ import annotations

from pathlib import Path

from zaya_config.train_checkpoint.layout import LATEST_NAME, read_latest, step_dir_name

from ckpt_reshape.errors import ReshapeError


def resolve_zaya_train_root(path: Path) -> Path:
    """A zaya-train checkpoint root (with a `latest` pointer) stands for its latest committed step folder."""
    latest = path / LATEST_NAME
    if path.is_dir() and latest.is_file() and not (path / ".metadata").exists():
        step = read_latest(path)
        if step is None:
            raise ReshapeError(f"{latest}: does not name a step folder (step_NNNNNNNN); rewrite it or pass the folder")
        folder = path / step_dir_name(step)
        if not folder.is_dir():
            raise ReshapeError(f"{latest}: points to {folder.name}, which does not exist")
        return folder
    return path
