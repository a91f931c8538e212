"""A matplotlib figure written as a PNG file atomically: every plot of a run goes through here."""

from pathlib import Path
from typing import Any

from zaya_config.atomic import write_atomic


def save_png(fig: Any, path: Path) -> None:
    """Write `fig` to `path` (110 dpi, tight box); a reader never sees a half-written file."""
    write_atomic(path, lambda handle: fig.savefig(handle, format="png", dpi=110, bbox_inches="tight"))
