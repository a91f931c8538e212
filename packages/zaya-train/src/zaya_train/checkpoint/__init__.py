"""Atomic, verified checkpoints for zaya-train (torch.distributed.checkpoint underneath).

`CheckpointManager(root, keep_last, async_save).save(step, state)` / `.load_latest(state)` / `.wait()`.
"""

from zaya_train.checkpoint.errors import CheckpointError
from zaya_train.checkpoint.manager import CheckpointManager, CorruptCheckpointWarning, SaveTiming
from zaya_train.checkpoint.manifest import ManifestProblem, verify_manifest

__all__ = [
    "CheckpointError",
    "CheckpointManager",
    "CorruptCheckpointWarning",
    "ManifestProblem",
    "SaveTiming",
    "verify_manifest",
]
