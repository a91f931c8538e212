"""TrainerHook: the events of a training run a hook may act on, as methods that do nothing by default.

A hook subclasses `TrainerHook` and overrides the events it needs; the Trainer calls every event on every
hook (Resilience first, then `trainer.hooks` in order) directly: the events are named once, here, and no
method is looked up by a string. An object that is not a TrainerHook is refused before the first step
(`check_hooks`). Device tensors a hook puts into a step's metrics are read to the host on logging steps and
dropped on the others.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from zaya_train.errors import ZayaTrainError

if TYPE_CHECKING:
    from zaya_train.trainer import Trainer


@runtime_checkable
class TrainerHook(Protocol):
    """The step events, in the order a step fires them; subclass and override the ones you need."""

    def before_step(self, trainer: Trainer) -> None:
        """The batch is drawn; nothing of this step has run yet."""

    def after_optimizer_step(self, trainer: Trainer, metrics: dict[str, Any]) -> None:
        """The optimizer stepped on an accepted batch (router balancing goes here)."""

    def on_dropped_step(self, trainer: Trainer, metrics: dict[str, Any]) -> None:
        """The anomaly guard dropped this batch (`metrics["anomaly"]`: "skip" or "rollback")."""

    def after_step(self, trainer: Trainer, metrics: dict[str, Any]) -> None:
        """The step is counted, logged, evaluated and saved on their cadences (a dropped batch is not counted)."""

    def on_checkpoint_saved(self, trainer: Trainer, step: int, folder: Path) -> None:
        """The checkpoint of `step` is committed in `folder` (an asynchronous save: some steps after it began)."""

    def on_end(self, trainer: Trainer, summary: dict[str, Any]) -> None:
        """The run is complete and every save committed; a hook may add to the summary."""


def check_hooks(hooks: Iterable[object]) -> None:
    """Every hook has every event, so the Trainer can call each one directly."""
    for hook in hooks:
        if not isinstance(hook, TrainerHook):
            raise ZayaTrainError(
                f"hook {type(hook).__name__} is not a TrainerHook; subclass zaya_train.hooks.TrainerHook "
                "(its events do nothing by default) and override the events it handles"
            )
