"""A checkpoint's non-tensor entries (optimizer param groups, step counters, ...), decoded without running code.

Such an entry is stored as torch.save bytes; it is decoded with `torch.load(weights_only=True)` (plain
values, containers and tensors), the way torch.distributed.checkpoint itself reads them, never with the
plain unpickler: a checkpoint is data.
"""

from __future__ import annotations

import io
import pickle

from ckpt_reshape.errors import ReshapeError


def load_object(payload: bytes, name: str) -> object:
    """The value of entry `name` from its torch.save bytes; a clear error when it would need code to load."""
    import torch

    try:
        return torch.load(io.BytesIO(payload), weights_only=True)
    except pickle.UnpicklingError as err:
        reason = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise ReshapeError(
            f"entry {name!r} is not plain data ({reason}); ckpt-reshape loads non-tensor entries with "
            "torch.load(weights_only=True) only: re-save the checkpoint without custom objects"
        ) from None
