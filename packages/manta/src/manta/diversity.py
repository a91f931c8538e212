"""A batch of N valid, different plans for one prompt: masked and reuse-penalised re-solves, then max-min Jaccard.

Every candidate plan is an exact solve of the same constrained problem, so each one fits the limits.
Plans are sampled two ways: per-concept masks (each concept loses a random part of its candidates, the
way Stylus masks adapters per image) and a reuse penalty on adapters that earlier plans already used,
swept over a small grid (points along the relevance / novelty Pareto front). From the pool, the batch
is picked greedily: start from the optimum, then always add the plan farthest (max of the minimum
Jaccard distance) from the plans already picked, among plans that keep enough of the best relevance.
Masks never empty a concept the optimum covers, and a plan that covers fewer concepts than the optimum is
rejected: diversity varies how a concept is served, never whether it is (see `manta.concept_keeping`).
"""

from __future__ import annotations

from collections import Counter

import numpy as np

from manta.concept_keeping import covered_concepts
from manta.plan import jaccard_distance
from manta.solver import CompositionProblem, Selection

REUSE_PENALTIES = (0.0, 0.15, 0.35, 0.7)


def relevance_of(selection: Selection) -> float:
    return sum(p.score for p in selection.picks)


def sample_pool(
    problem: CompositionProblem, size: int, rng: np.random.Generator, mask_probability: float
) -> list[Selection]:
    """The optimum plus up to `size - 1` distinct alternative selections."""
    best = problem.solve()
    covered = covered_concepts(best.picks)
    pool = {best.key: best}
    used: Counter[int] = Counter(p.position for p in best.picks)
    used_bases = {best.base}
    base_rows = np.array(problem.bases)
    concepts = np.array([c.concept for c in problem.candidates], dtype=np.int64)
    positions = np.array([c.position for c in problem.candidates], dtype=np.int64)
    attempts = 0
    while len(pool) < size and attempts < 2 * size:
        attempts += 1
        penalty = REUSE_PENALTIES[attempts % len(REUSE_PENALTIES)]
        reuse = np.array([used[p] for p in positions], dtype=float)
        scores = problem.scores - penalty * reuse
        allowed = np.ones(len(positions), dtype=bool)
        if len(positions):
            masked_concepts = rng.random(concepts.max() + 1) < mask_probability
            drop = rng.random(len(positions)) < 0.5
            allowed = ~(masked_concepts[concepts] & drop)
            for c in covered:  # keep one candidate of each covered concept open: masks vary, never drop
                if not allowed[concepts == c].any():
                    allowed[np.flatnonzero(concepts == c)[rng.integers((concepts == c).sum())]] = True
        # Bases used so far are masked with the same probability; at least one base that fits stays open.
        allowed_bases = problem.fitting_bases & ~(
            np.isin(base_rows, list(used_bases)) & (rng.random(len(base_rows)) < mask_probability)
        )
        if not allowed_bases.any():
            allowed_bases = problem.fitting_bases
        selection = problem.solve(scores=scores, allowed=allowed, allowed_bases=allowed_bases)
        selection = Selection(selection.base, selection.picks, relevance_of(selection))
        if not covered <= covered_concepts(selection.picks):
            continue
        if selection.key not in pool:
            pool[selection.key] = selection
            used.update(p.position for p in selection.picks)
            used_bases.add(selection.base)
    return list(pool.values())


def pick_diverse(pool: list[Selection], n: int, min_relative_relevance: float) -> list[Selection]:
    """N selections, the optimum first, each next one farthest from those already picked."""
    best, rest = pool[0], pool[1:]
    floor = min_relative_relevance * relevance_of(best)
    eligible = [s for s in rest if relevance_of(s) >= floor - 1e-12]
    chosen = [best]
    sets = {id(best): _names(best)}
    for s in eligible:
        sets[id(s)] = _names(s)
    while len(chosen) < n and eligible:

        def spread(s: Selection) -> tuple[float, float]:
            return (min(jaccard_distance(sets[id(s)], sets[id(c)]) for c in chosen), relevance_of(s))

        nxt = max(eligible, key=spread)
        eligible.remove(nxt)
        chosen.append(nxt)
    # Fewer distinct valid plans than images: repeat them in order (every one still fits the limits).
    return [chosen[i % len(chosen)] for i in range(n)]


def _names(selection: Selection) -> frozenset[str]:
    return frozenset(str(p) for p in selection.key)


def diverse_selections(
    problem: CompositionProblem,
    n: int,
    seed: int,
    mask_probability: float,
    pool_factor: int,
    min_relative_relevance: float,
) -> list[Selection]:
    """N valid selections for a batch of N images, maximising pairwise Jaccard distance."""
    if n == 1:
        return [problem.solve()]
    rng = np.random.default_rng(seed)
    pool = sample_pool(problem, pool_factor * n, rng, mask_probability)
    return pick_diverse(pool, n, min_relative_relevance)
