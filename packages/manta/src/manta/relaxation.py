"""The per-base relaxation that makes the exact solve fast: the optimum when budgets and uniqueness are ignored.

With the base fixed, dropping the VRAM / latency / price rows and the each-adapter-once rows leaves
"at most k per concept, at most M in all" with value score + coverage bonus for a concept's first adapter
and score for the next ones. Within a concept those marginal values never increase, so taking the M best
marginals (each concept's in rank order) is optimal. The relaxed value bounds the true optimum of that
base from above, and when the relaxed choice happens to fit the budgets and uses no adapter twice it IS
the optimum: most prompts need no branch and bound at all.
"""

from __future__ import annotations

import numpy as np


def relaxed_choice(
    scores_J: np.ndarray, concept_J: np.ndarray, ok_J: np.ndarray, k: int, max_adapters: int, bonus: float
) -> tuple[np.ndarray, float]:
    """Candidate indices of the relaxed optimum among `ok_J`, and its value (without the base's score)."""
    idx = np.flatnonzero(ok_J)
    if len(idx) == 0 or max_adapters == 0 or k == 0:
        return idx[:0], 0.0
    order = idx[np.lexsort((-scores_J[idx], concept_J[idx]))]  # by concept, best first
    concepts = concept_J[order]
    starts = np.r_[0, np.flatnonzero(np.diff(concepts)) + 1]
    rank = np.arange(len(order)) - np.repeat(starts, np.diff(np.r_[starts, len(order)]))
    keep = rank < k
    order, rank = order[keep], rank[keep]
    marginal = scores_J[order] + bonus * (rank == 0)
    positive = marginal > 1e-12  # marginals fall within a concept, so this keeps a prefix of each
    order, rank, marginal = order[positive], rank[positive], marginal[positive]
    top = np.lexsort((rank, -marginal))[:max_adapters]
    return order[top], float(marginal[top].sum())
