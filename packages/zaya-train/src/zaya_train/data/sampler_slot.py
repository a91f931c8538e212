"""SamplerSlot: the current phase's sampler as one object for the whole run, so the checkpoint manager can
hold it while the Trainer replaces the sampler at every phase.

Saving gives the current sampler's position (None before the first phase). Loading keeps the saved position
in `loaded`: which phase it belongs to is in the progress loaded beside it, and the Trainer enters that phase
with it (`Trainer.resume`).
"""

from typing import Any

from zaya_train.data.sampler import MixtureSampler


class SamplerSlot:
    """Holds `sampler` (the phase's MixtureSampler, or None) and `loaded` (the position a load brought)."""

    def __init__(self) -> None:
        self.sampler: MixtureSampler | None = None
        self.loaded: dict[str, Any] | None = None

    def state_dict(self) -> dict[str, Any] | None:
        return self.sampler.state_dict() if self.sampler is not None else None

    def load_state_dict(self, state: dict[str, Any] | None) -> None:
        self.loaded = state
