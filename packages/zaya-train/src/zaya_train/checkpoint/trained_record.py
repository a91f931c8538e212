"""The `trained_model.json` of a trainer's checkpoint: the model config as it is being trained right now.

Written into every step folder next to the weights (`zaya_config.train_checkpoint.trained_model`), so the
readers of a checkpoint (`zaya model generate`, `zaya eval`, ckpt-reshape's HF export) take the phase's RoPE
theta, the context length and the tokenizer from the checkpoint instead of re-deriving them from the recipe.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from zaya_config.train_checkpoint.layout import TRAINED_MODEL_NAME
from zaya_config.train_checkpoint.trained_model import TrainedModel

if TYPE_CHECKING:
    from zaya_train.trainer import Trainer


def trained_model_record(trainer: Trainer) -> TrainedModel | None:
    """The trainer's model as trained at its current step; None for a model without a ZayaConfig."""
    config = getattr(trainer.model, "config", None)
    if not hasattr(config, "to_dict"):
        return None
    index, phases = trainer.progress.phase, trainer.recipe.phases
    phase = None
    if 0 <= index < len(phases):
        spec = phases[index]
        phase = {"index": index, "name": spec.name, "seq_len": spec.seq_len, "rope_theta": float(spec.rope_theta)}
    identity = trainer.data.tokenizer.describe()
    tokenizer = {
        "config": dataclasses.asdict(trainer.cfg.data.tokenizer),
        **{key: identity[key] for key in ("eos_id", "fingerprint", "vocab_size") if key in identity},
    }
    return TrainedModel(
        step=trainer.progress.step,
        model=config.to_dict(),
        tokenizer=tokenizer,
        phase=phase,
        tokens=int(trainer.progress.tokens),
    )


def step_files(trainer: Trainer) -> dict[str, str]:
    """The text files a checkpoint of `trainer` carries besides its state: `trained_model.json`."""
    record = trained_model_record(trainer)
    return {} if record is None else {TRAINED_MODEL_NAME: record.to_json()}
