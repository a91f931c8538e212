"""Alias kept until trainer.py, build.py and resilience/ import `zaya_config.atomic` directly (issue #19)."""

from zaya_config.atomic import durable_rename, fsync_path
from zaya_config.atomic import write_bytes_atomic as atomic_write_bytes
from zaya_config.atomic import write_text_atomic as atomic_write_text

__all__ = ["atomic_write_bytes", "atomic_write_text", "durable_rename", "fsync_path"]
