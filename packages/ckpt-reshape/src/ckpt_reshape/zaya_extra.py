"""zaya-model, the `ckpt-reshape[zaya]` extra: imported only when a ZAYA checkpoint is read.

ckpt-reshape converts any model's checkpoints; only ZAYA ones need zaya-model's shard plan, HF key map and
config. Without the extra, reading one stops with one line naming the install command.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from ckpt_reshape.errors import ReshapeError

INSTALL_HINT = "install ckpt-reshape[zaya]"


def zaya_model(module: str = "zaya_model") -> ModuleType:
    """zaya_model (or one of its modules), imported on first use; a clear error when the extra is missing."""
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as err:
        if err.name is None or not err.name.startswith("zaya_model"):
            raise
        raise ReshapeError(
            f"this is a ZAYA checkpoint and reading it needs zaya-model, which is not installed; {INSTALL_HINT} "
            "(pip install 'ckpt-reshape[zaya]')"
        ) from None
