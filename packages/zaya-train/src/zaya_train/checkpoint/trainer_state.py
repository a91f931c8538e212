"""What a training run's checkpoint holds: the one place that lists its parts.

    parts = checkpoint_parts(model, optimizer, progress, sampler, resilience, world_size=2, recipe="tiny-cpu")
    CheckpointManager(root, parts=parts)   # save(step) / load_latest() go through the parts

`model` and `optim` are DCP state dicts (`checkpoint/parts.py`; ZeRO-1 optimizer state is saved by parameter
name, so it resumes on any world size). `train` is the picklable rest, one file per rank: progress (step,
tokens, phase, loss and validation history), RNG states, the world size, the sampler position, the recipe's
name and the resilience state (anomaly window and counters). The keys are those every checkpoint has had.
"""

from torch import nn
from torch.distributed.checkpoint.stateful import Stateful
from torch.optim import Optimizer

from zaya_train.checkpoint.parts import ModelState, OptimizerState, PlainState, Written
from zaya_train.train_state import RNGState


def checkpoint_parts(
    model: nn.Module,
    optimizer: Optimizer,
    progress: Stateful,
    sampler: Stateful,
    resilience: Stateful,
    *,
    world_size: int,
    recipe: str,
    zero1: bool = False,
) -> dict[str, Stateful]:
    """{"model", "optim", "train"} as the CheckpointManager saves them (the order they load in)."""
    train = {
        "progress": progress,
        "rng": RNGState(),
        "world_size": Written(world_size),
        "sampler": sampler,
        "recipe": Written(recipe),
        "resilience": resilience,
    }
    return {"model": ModelState(model), "optim": OptimizerState(model, optimizer, zero1), "train": PlainState(train)}
