"""ZeRO-1 optimizer state under logical parameter names, so a ZeRO-1 checkpoint resumes on any world size.

`ZeroRedundancyOptimizer` gives each rank a local optimizer over the parameters its greedy, size-balanced
partition assigns to it; its own `state_dict()` indexes them by position in that partition, which ties the
state to the world size. Here a rank's entries are written in the form `get_state_dict` gives the unsharded
optimizer: `{"state": {fqn: {"exp_avg", "exp_avg_sq", "step" | "momentum_buffer"}}, "param_groups": [...]}`
with every group's `params` as fully qualified names (DCP flattens them to `optim.state.<fqn>.<name>`).
Every rank saves the entries of the parameters it owns (DCP merges the ranks' plans; each entry is written
once, by its owner) and the same global `param_groups`, so the checkpoint is the one DDP without ZeRO writes:
it loads under DDP, ZeRO-1 on another world size, or a single process, and ckpt-reshape treats it as DDP.

On resume each rank asks DCP only for the entries its parameters own under the *current* partition. The
groups' hyperparameters are not loaded: betas, eps, weight decay and Muon's settings come from the config and
the learning rate is set by the schedule before every step (`Trainer.train_step`), so nothing in
`param_groups` is needed for an exact resume.

Names: a parameter's fqn is its name in `model.named_parameters()` of the unwrapped model (tied weights
once, under their first name), as `get_state_dict` names them.
"""

from typing import Any

import torch
from torch import nn
from torch.distributed.optim import ZeroRedundancyOptimizer

from zaya_train.errors import ZayaTrainError


def parameter_names(model: nn.Module) -> dict[nn.Parameter, str]:
    """Parameter -> fully qualified name (tied parameters once, under their first name)."""
    return {p: name for name, p in model.named_parameters()}


def _owned(model: nn.Module, zero: ZeroRedundancyOptimizer) -> list[tuple[str, nn.Parameter]]:
    """(fqn, parameter) of every parameter this rank's local optimizer steps."""
    names = parameter_names(model)
    owned = []
    for group in zero.optim.param_groups:
        for p in group["params"]:
            if p not in names:
                raise ZayaTrainError(
                    f"a ZeRO-1 parameter of shape {list(p.shape)} is not among the model's named parameters; "
                    "build the optimizer over `model.parameters()` of the model that is checkpointed"
                )
            owned.append((names[p], p))
    return owned


def _init_local_state(zero: ZeroRedundancyOptimizer) -> None:
    """Create the local optimizer's state (zero moments) if it has none, exactly as `get_state_dict` does.

    torch's helper steps the optimizer once with zero gradients and lr 0, which leaves the weights bitwise
    unchanged; the step counters it advances are overwritten by a load (or cleared by the caller)."""
    from torch.distributed.checkpoint.state_dict import _init_optim_state

    _init_optim_state(zero.optim)


def zero1_state_dict(model: nn.Module, zero: ZeroRedundancyOptimizer) -> dict[str, Any]:
    """This rank's part of the logical optimizer state dict: its parameters' state and the global groups."""
    _init_local_state(zero)
    names = parameter_names(model)
    state = {fqn: dict(zero.optim.state[p]) for fqn, p in _owned(model, zero) if p in zero.optim.state}
    groups = [
        {**{k: v for k, v in group.items() if k != "params"}, "params": [names[p] for p in group["params"]]}
        for group in zero.param_groups
    ]
    return {"state": state, "param_groups": groups}


def zero1_template(model: nn.Module, zero: ZeroRedundancyOptimizer) -> dict[str, Any]:
    """What this rank loads: the state of the parameters it owns under the current partition (zero-filled,
    with the shapes and dtypes of a real step, for DCP to load into)."""
    return {"state": zero1_state_dict(model, zero)["state"]}


def load_zero1_state_dict(model: nn.Module, zero: ZeroRedundancyOptimizer, loaded: dict[str, Any]) -> None:
    """Put a loaded `zero1_template` into this rank's local optimizer."""
    for fqn, p in _owned(model, zero):
        if fqn not in loaded["state"]:
            raise ZayaTrainError(
                f"ZeRO-1 resume: no optimizer state for parameter {fqn!r} was loaded; the checkpoint was written "
                "for another model or optimizer (compare `train.optimizer` and the model config with the run's)"
            )
        entry = {}
        for name, value in loaded["state"][fqn].items():
            if torch.is_tensor(value) and value.dim() > 0:
                value = value.to(p.device)
            entry[name] = value
        zero.optim.state[p] = entry


def local_optimizer(optimizer: torch.optim.Optimizer) -> torch.optim.Optimizer:
    """The optimizer that holds this rank's state (ZeRO-1's local one, else the optimizer itself)."""
    return optimizer.optim if isinstance(optimizer, ZeroRedundancyOptimizer) else optimizer
