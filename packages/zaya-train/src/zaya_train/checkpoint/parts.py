"""The Stateful parts a CheckpointManager is handed: each has `state_dict()` and `load_state_dict()`
(torch.distributed.checkpoint.stateful.Stateful), so the manager saves and restores them knowing nothing
of what they belong to.

`ModelState` and `OptimizerState` give DCP state dicts (FSDP2 shards stay sharded; under ZeRO-1 the optimizer's
is this rank's part of the logical, per-parameter-name state, optim/zero1_state.py). `PlainState` bundles the
picklable parts each rank writes to its own file; `Written` is a value written for the checkpoint's readers
(ckpt-reshape, people) and never loaded back.
"""

from collections.abc import Mapping
from typing import Any

import torch
from torch import nn
from torch.distributed.checkpoint.stateful import Stateful


class ModelState:
    """The model's DCP state dict (`get_model_state_dict`), loaded back with `set_model_state_dict`."""

    def __init__(self, model: nn.Module) -> None:
        self.model = model

    def state_dict(self) -> dict[str, Any]:
        from torch.distributed.checkpoint.state_dict import get_model_state_dict

        return get_model_state_dict(self.model)

    def load_state_dict(self, state: dict[str, Any]) -> None:
        from torch.distributed.checkpoint.state_dict import set_model_state_dict

        set_model_state_dict(self.model, state)


class OptimizerState:
    """The optimizer's DCP state dict by parameter name; under ZeRO-1 this rank's parameters only.

    The state dict is also the template a load fills, and building it creates the optimizer state (DCP
    steps it once with zero gradients and lr 0): the manager builds it only when a checkpoint is there."""

    def __init__(self, model: nn.Module, optimizer: torch.optim.Optimizer, zero1: bool = False) -> None:
        self.model, self.optimizer, self.zero1 = model, optimizer, zero1

    def state_dict(self) -> dict[str, Any]:
        if self.zero1:
            from zaya_train.optim.zero1_state import zero1_state_dict

            return zero1_state_dict(self.model, self.optimizer)
        from torch.distributed.checkpoint.state_dict import get_optimizer_state_dict

        return get_optimizer_state_dict(self.model, self.optimizer)

    def load_state_dict(self, state: dict[str, Any]) -> None:
        if self.zero1:  # the entries of the parameters this rank owns under the current partition
            from zaya_train.optim.zero1_state import load_zero1_state_dict

            load_zero1_state_dict(self.model, self.optimizer, state)
            return
        from torch.distributed.checkpoint.state_dict import set_optimizer_state_dict

        set_optimizer_state_dict(self.model, self.optimizer, state)


class PlainState:
    """Named picklable parts as one dict, loaded back part by part (a part the checkpoint lacks gets None)."""

    def __init__(self, parts: Mapping[str, Stateful]) -> None:
        self.parts = dict(parts)

    def state_dict(self) -> dict[str, Any]:
        return {name: part.state_dict() for name, part in self.parts.items()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        for name, part in self.parts.items():
            part.load_state_dict(state.get(name))


class Written:
    """A value written into every checkpoint for its readers; loading leaves it as configured."""

    def __init__(self, value: Any) -> None:
        self.value = value

    def state_dict(self) -> Any:
        return self.value

    def load_state_dict(self, state: Any) -> None:
        """Nothing to restore: the value describes the run that wrote the checkpoint."""
