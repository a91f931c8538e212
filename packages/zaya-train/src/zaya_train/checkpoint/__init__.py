"""Atomic, verified checkpoints for zaya-train (torch.distributed.checkpoint underneath).

`CheckpointManager(root, keep_last, async_save, parts=...)`: `.save(step)` / `.load_latest()` through the
Stateful parts it is handed (`parts.py`; a training run's: `trainer_state.checkpoint_parts`), or
`.save(step, state)` / `.load_latest(state)` with the state dicts themselves; `.wait()` for an async save.
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
