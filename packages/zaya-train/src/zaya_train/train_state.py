"""The plain, picklable part of a checkpoint: counters, phase, sampler position, RNG states, metric history."""

import random
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import torch


@dataclass
class TrainProgress:
    """Where the run is: optimizer steps done, tokens consumed, current phase, recent losses."""

    step: int = 0
    tokens: int = 0
    phase: int = -1  # -1: no phase entered yet
    loss_history: list[float] = field(default_factory=list)  # last HISTORY train losses (spike detection)
    val_history: list[dict[str, float]] = field(default_factory=list)

    HISTORY = 200

    def record_loss(self, loss: float) -> None:
        """Append a train loss, keeping the window bounded."""
        self.loss_history.append(loss)
        del self.loss_history[: -self.HISTORY]

    def state_dict(self) -> dict[str, Any]:
        return asdict(self)

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Become the saved progress in place (the checkpoint manager holds this object, not a copy)."""
        vars(self).update(vars(self.from_state_dict(state)))

    @classmethod
    def from_state_dict(cls, state: dict[str, Any]) -> "TrainProgress":
        return cls(**state)


def rng_state() -> dict[str, Any]:
    """Every RNG a step may draw from (python, numpy, torch CPU and CUDA)."""
    state = {"python": random.getstate(), "numpy": np.random.get_state(), "torch": torch.get_rng_state()}
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: dict[str, Any]) -> None:
    """Restore what `rng_state` captured."""
    random.setstate(state["python"])
    np.random.set_state(state["numpy"])
    torch.set_rng_state(state["torch"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


class RNGState:
    """Every RNG a step may draw from, as a checkpoint part (Stateful: `state_dict` / `load_state_dict`)."""

    def state_dict(self) -> dict[str, Any]:
        return rng_state()

    def load_state_dict(self, state: dict[str, Any]) -> None:
        set_rng_state(state)
