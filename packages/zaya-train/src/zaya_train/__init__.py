"""zaya-train: the ZAYA1 pretraining stack.

Data (tokenizers, zarr token shards, a deterministic resumable mixture sampler), optimizers (AdamW, Muon),
phased recipes with context extension, one training loop for single-process, DDP and FSDP2 runs under
torchrun, metrics and plots, and torch.distributed.checkpoint checkpoints. `build_trainer(cfg, run_dir)`
turns a composed config, or the same groups as config objects (`model`, `train`, `recipe`, `hardware`,
`logging`), into a `Trainer`.

Importing this package is light (no torch): the heavy parts load on first use, so `zaya --help` stays fast.
"""

from importlib import import_module
from importlib.metadata import PackageNotFoundError, version
from typing import Any

try:
    __version__ = version("zaya-train")
except PackageNotFoundError:  # a source tree that is not installed
    __version__ = "0.0.0"

_EXPORTS = {
    "ZayaTrainError": "zaya_train.errors",
    "TrainConfig": "zaya_train.config",
    "RecipeConfig": "zaya_train.recipe",
    "PhaseConfig": "zaya_train.recipe",
    "ScheduleConfig": "zaya_train.recipe",
    "Trainer": "zaya_train.trainer",
    "build_trainer": "zaya_train.build",
    "run_pretraining": "zaya_train.build",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'zaya_train' has no attribute {name!r}")
