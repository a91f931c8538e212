"""RouterBalancing: the ZAYA router's bias balancing as a Trainer step hook.

The model counts the tokens each router sends to each class (experts and the skip route) over a step's
micro-batches. After the optimizer step this hook all-reduces the counts once (the step's only collective
outside DDP/FSDP's own), moves the biases toward balance (`ZayaForCausalLM.update_router_biases`) and puts the
step's global load fractions into the metrics as device tensors; the Trainer reads them to the host on
logging steps only. A batch the anomaly guard drops does not steer the balancing: its counts are forgotten.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from zaya_train.hooks import TrainerHook

if TYPE_CHECKING:
    from zaya_train.trainer import Trainer


class RouterBalancing(TrainerHook):
    """For models with `update_router_biases()` and `reset_router_counts()` (zaya_model.ZayaForCausalLM)."""

    @staticmethod
    def applies_to(model: Any) -> bool:
        """Whether `model` has routers to balance."""
        return hasattr(model, "update_router_biases") and hasattr(model, "reset_router_counts")

    def after_optimizer_step(self, trainer: Trainer, metrics: dict[str, Any]) -> None:
        """Balance on the step's counts; `expert_load` [layers, experts + 1] and `skip_rate` go into metrics."""
        load = trainer.model.update_router_biases()
        metrics["expert_load"] = load
        metrics["skip_rate"] = load[:, -1].mean()

    def on_dropped_step(self, trainer: Trainer, metrics: dict[str, Any]) -> None:
        """A skipped or rolled-back batch: forget what its routers counted."""
        trainer.model.reset_router_counts()
