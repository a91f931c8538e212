"""Optimizers (AdamW, Muon), parameter groups and learning-rate schedules."""

from zaya_train.optim.muon import Muon, newton_schulz
from zaya_train.optim.param_groups import build_optimizer, classify_parameters, parameter_groups
from zaya_train.optim.schedules import learning_rate, warmup_cosine, warmup_stable_decay

__all__ = [
    "Muon",
    "build_optimizer",
    "classify_parameters",
    "learning_rate",
    "newton_schulz",
    "parameter_groups",
    "warmup_cosine",
    "warmup_stable_decay",
]
