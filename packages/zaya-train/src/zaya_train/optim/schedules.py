"""Learning-rate schedules as pure functions of progress, so a phase change or a resume needs no state."""

import math
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from zaya_train.recipe import ScheduleConfig


def _warmup(progress: float, warmup: float, start_lr: float, peak_lr: float) -> float:
    return start_lr + (peak_lr - start_lr) * progress / warmup


def _decay(fraction: float, peak_lr: float, end_lr: float, shape: str) -> float:
    """fraction in [0, 1] of the decay stretch done."""
    fraction = min(max(fraction, 0.0), 1.0)
    if shape == "cosine":
        return end_lr + (peak_lr - end_lr) * 0.5 * (1.0 + math.cos(math.pi * fraction))
    return peak_lr + (end_lr - peak_lr) * fraction


def warmup_cosine(
    progress: float, peak_lr: float, end_lr: float, warmup_fraction: float, start_lr: float = 0.0
) -> float:
    """Linear warmup to peak_lr, then cosine down to end_lr at progress 1."""
    if warmup_fraction > 0 and progress < warmup_fraction:
        return _warmup(progress, warmup_fraction, start_lr, peak_lr)
    return _decay((progress - warmup_fraction) / max(1.0 - warmup_fraction, 1e-12), peak_lr, end_lr, "cosine")


def warmup_stable_decay(
    progress: float,
    peak_lr: float,
    end_lr: float,
    warmup_fraction: float,
    decay_fraction: float,
    start_lr: float = 0.0,
    shape: str = "linear",
) -> float:
    """Warmup, hold peak_lr, then decay to end_lr over the last decay_fraction of the run (MiniCPM's WSD)."""
    if warmup_fraction > 0 and progress < warmup_fraction:
        return _warmup(progress, warmup_fraction, start_lr, peak_lr)
    decay_start = 1.0 - decay_fraction
    if decay_fraction <= 0 or progress < decay_start:
        return peak_lr
    return _decay((progress - decay_start) / decay_fraction, peak_lr, end_lr, shape)


def learning_rate(schedule: "ScheduleConfig", progress: float) -> float:
    """The LR of a phase's schedule segment at `progress` (0 = phase start, 1 = phase end)."""
    progress = min(max(progress, 0.0), 1.0)
    if schedule.kind == "warmup_cosine":
        return warmup_cosine(progress, schedule.peak_lr, schedule.end_lr, schedule.warmup_fraction, schedule.start_lr)
    decay = schedule.decay_fraction if schedule.kind == "wsd" else 0.0
    return warmup_stable_decay(
        progress,
        schedule.peak_lr,
        schedule.end_lr,
        schedule.warmup_fraction,
        decay,
        schedule.start_lr,
        schedule.decay_shape,
    )
