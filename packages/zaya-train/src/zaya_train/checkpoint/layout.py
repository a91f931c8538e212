"""Alias kept until trainer.py and resilience/ import `zaya_config.train_checkpoint.layout` (issue #19)."""

from zaya_config.train_checkpoint.layout import step_dir_name, step_dirs

__all__ = ["step_dir_name", "step_dirs"]
