"""Statistics of one comparison (system A against system B on one criterion over N prompts) that can fail.

Per prompt the judge gives A a win, a tie or a loss. The rate is (wins + ties / 2) / prompts, so that 0.5
means even (an A/A run, a system against itself with other seeds, should land there); its 95% interval is a
paired bootstrap over prompts (each resample keeps every prompt's two batches together, so what the two
systems share cancels); the sign test is the exact two-sided binomial test of wins against losses (ties
dropped). Where the judge measured a number per batch, the mean of A's minus B's value over prompts gets a
bootstrap interval from the same resamples. A claim "A beats B" is made only where the rate's interval lies
wholly above 0.5 (`beats`).
"""

from __future__ import annotations

from dataclasses import dataclass
from math import comb
from typing import Any

import numpy as np

BOOTSTRAP_SAMPLES = 4000
BOOTSTRAP_SEED = 0  # the resamples are fixed: the same outcomes give the same interval
LEVEL = 0.95


def sign_test(wins: int, losses: int) -> float:
    """Exact two-sided p-value of `wins` against `losses` under a fair coin (1.0 when nothing was decided)."""
    n, k = wins + losses, min(wins, losses)
    if n == 0:
        return 1.0
    tail = sum(comb(n, i) for i in range(k + 1)) / 2**n
    return float(min(1.0, 2 * tail))


def bootstrap_means(values_PV: np.ndarray, samples: int = BOOTSTRAP_SAMPLES, seed: int = BOOTSTRAP_SEED) -> np.ndarray:
    """Means over prompts of `samples` paired resamples of the prompts: samples x V (one column per value)."""
    values_PV = np.asarray(values_PV, dtype=np.float64).reshape(len(values_PV), -1)
    picks_SP = np.random.default_rng(seed).integers(len(values_PV), size=(samples, len(values_PV)))
    return values_PV[picks_SP].mean(axis=1)


def interval(means_S: np.ndarray, level: float = LEVEL) -> list[float]:
    """The percentile interval of bootstrap means."""
    tail = (1 - level) / 2
    lo, hi = np.quantile(means_S, [tail, 1 - tail])
    return [float(lo), float(hi)]


@dataclass(frozen=True)
class Comparison:
    """A's wins, ties and losses against B on one criterion, with the rate's interval and the sign test."""

    win: int
    tie: int
    loss: int
    rate: float
    ci: tuple[float, float]
    sign_p: float
    diff: float | None = None  # mean over prompts of A's measured value minus B's (where the judge measures)
    diff_ci: tuple[float, float] | None = None

    @property
    def prompts(self) -> int:
        return self.win + self.tie + self.loss

    @property
    def beats(self) -> bool:
        """A beats B: the rate's whole interval above 0.5."""
        return self.ci[0] > 0.5

    @property
    def loses(self) -> bool:
        """B beats A: the rate's whole interval below 0.5."""
        return self.ci[1] < 0.5

    @property
    def even(self) -> bool:
        """0.5 inside the rate's interval (what an A/A run must give)."""
        return self.ci[0] <= 0.5 <= self.ci[1]

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "win": self.win,
            "tie": self.tie,
            "loss": self.loss,
            "rate": round(self.rate, 4),
            "ci": [round(v, 4) for v in self.ci],
            "sign_p": round(self.sign_p, 6),
        }
        if self.diff is not None and self.diff_ci is not None:
            out["diff"] = round(self.diff, 5)
            out["diff_ci"] = [round(v, 5) for v in self.diff_ci]
        return out


def compare_outcomes(outcomes: np.ndarray, diffs: np.ndarray | None = None) -> Comparison:
    """The statistics of per-prompt outcomes (+1 A won, 0 tie, -1 A lost) and, if given, per-prompt differences
    of the measured values (A's minus B's), bootstrapped with the same resamples."""
    outcomes = np.asarray(outcomes)
    if outcomes.size == 0:
        raise ValueError("a comparison needs at least one prompt")
    if not np.isin(outcomes, (-1, 0, 1)).all():
        raise ValueError(f"outcomes must be -1, 0 or +1, got {sorted(set(outcomes.tolist()))}")
    win, loss = int((outcomes == 1).sum()), int((outcomes == -1).sum())
    tie = len(outcomes) - win - loss
    score_P = (outcomes + 1) / 2.0  # 1 win, 0.5 tie, 0 loss
    columns = [score_P] if diffs is None else [score_P, np.asarray(diffs, dtype=np.float64)]
    means_SV = bootstrap_means(np.stack(columns, axis=1))
    lo, hi = interval(means_SV[:, 0])
    result = Comparison(win, tie, loss, float(score_P.mean()), (lo, hi), sign_test(win, loss))
    if diffs is None:
        return result
    dlo, dhi = interval(means_SV[:, 1])
    return Comparison(win, tie, loss, result.rate, result.ci, result.sign_p, float(np.mean(diffs)), (dlo, dhi))
