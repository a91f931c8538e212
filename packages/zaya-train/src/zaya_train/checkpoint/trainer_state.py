"""What a Trainer's checkpoint holds, and how it goes back in: the one place that knows both directions.

    state = collect(trainer)            # {"model", "optim", "train"}: DCP state dicts + this rank's plain dict
    step = restore(trainer)             # loads the newest verified checkpoint into the trainer, or None

`model` and `optim` are DCP state dicts (FSDP2 shards stay sharded). Under ZeRO-1 `optim` is this rank's part of
the logical, per-parameter-name optimizer state, which DCP merges with the other ranks' into the checkpoint an
unsharded optimizer writes (optim/zero1_state.py), so it resumes on any world size. `train` is the picklable
rest: progress, RNG states, sampler position, recipe name and the resilience state.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from zaya_train.train_state import TrainProgress, rng_state, set_rng_state

if TYPE_CHECKING:
    from zaya_train.trainer import Trainer

log = logging.getLogger("zaya_train")


def train_state(trainer: Trainer) -> dict[str, Any]:
    """The picklable part of a checkpoint (per rank)."""
    return {
        "progress": trainer.progress.state_dict(),
        "rng": rng_state(),
        "world_size": trainer.ctx.world_size,
        "sampler": trainer.sampler.state_dict() if trainer.sampler is not None else None,
        "recipe": trainer.recipe.name,
        "resilience": trainer.resilience.state_dict(),
    }


def collect(trainer: Trainer) -> dict[str, Any]:
    """{"model", "optim", "train"} as `CheckpointManager.save` expects."""
    from torch.distributed.checkpoint.state_dict import get_model_state_dict, get_state_dict

    if trainer.zero1:
        from zaya_train.optim.zero1_state import zero1_state_dict

        optim = zero1_state_dict(trainer.model, trainer.optimizer)
        return {"model": get_model_state_dict(trainer.model), "optim": optim, "train": train_state(trainer)}
    model, optim = get_state_dict(trainer.model, trainer.optimizer)
    return {"model": model, "optim": optim, "train": train_state(trainer)}


def restore(trainer: Trainer) -> int | None:
    """Load the newest verified checkpoint into `trainer` (weights, optimizer, progress, phase, sampler, RNG,
    resilience state); returns its step, or None when there is none (the trainer is then left as it was)."""
    from torch.distributed.checkpoint.state_dict import get_model_state_dict, set_model_state_dict, set_state_dict

    from zaya_train.optim.zero1_state import load_zero1_state_dict, local_optimizer, zero1_template

    # Building the templates initialises the optimizer state (DCP steps it once with zero grads, which advances
    # AdamW's step counters); a successful load overwrites it, a failed one must not keep it.
    optimizer_state = local_optimizer(trainer.optimizer).state
    fresh = not optimizer_state
    if trainer.zero1:  # only this rank's parameters under the current partition (any world size)
        state = {
            "model": get_model_state_dict(trainer.model),
            "optim": zero1_template(trainer.model, trainer.optimizer),
        }
    else:
        state = collect(trainer)
    step = trainer.checkpoints.load_latest(state)
    if step is None:
        if fresh:
            optimizer_state.clear()
        return None
    if trainer.zero1:
        set_model_state_dict(trainer.model, state["model"])
        load_zero1_state_dict(trainer.model, trainer.optimizer, state["optim"])
    else:
        set_state_dict(
            trainer.model, trainer.optimizer, model_state_dict=state["model"], optim_state_dict=state["optim"]
        )
    train = state["train"]
    trainer.progress = TrainProgress.from_state_dict(train["progress"])
    if trainer.progress.phase >= 0:
        trainer.enter_phase(trainer.progress.phase, train["sampler"])
    set_rng_state(train["rng"])
    trainer.resilience.load_state_dict(train.get("resilience"))
    trainer.resilience.resumed(step)
    log.info("resumed from step %d (%d tokens, phase %d)", step, trainer.progress.tokens, trainer.progress.phase)
    return step
