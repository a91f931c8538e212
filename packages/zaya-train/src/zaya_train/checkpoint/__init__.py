"""Atomic, verified checkpoints for zaya-train (torch.distributed.checkpoint underneath).

`CheckpointManager(root, keep_last, async_save).save(step, state)` / `.load_latest(state)` / `.wait()`.
The root's names and its manifest format live in `zaya_config.train_checkpoint` (shared with ckpt-reshape).
"""

from zaya_config.train_checkpoint.manifest import ManifestProblem, verify_manifest

from zaya_train.checkpoint.errors import CheckpointError
from zaya_train.checkpoint.manager import CheckpointManager, CorruptCheckpointWarning, SaveTiming

__all__ = [
    "CheckpointError",
    "CheckpointManager",
    "CorruptCheckpointWarning",
    "ManifestProblem",
    "SaveTiming",
    "verify_manifest",
]
