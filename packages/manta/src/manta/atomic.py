"""Atomic file writes, under manta's historical names; the one implementation is `zaya_config.atomic`."""

from zaya_config.atomic import write_atomic as atomic_write
from zaya_config.atomic import write_text_atomic as atomic_write_text

__all__ = ["atomic_write", "atomic_write_text"]
