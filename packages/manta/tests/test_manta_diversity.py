"""Batch selection: the optimum first, then max-min Jaccard among plans that keep enough relevance."""

import numpy as np
from manta.diversity import diverse_selections, pick_diverse, relevance_of
from manta.retrieval import Candidate
from manta.solver import Selection


def selection(base, positions, score=0.5):
    return Selection(base, tuple(Candidate(0, p, score, score) for p in positions), 0.0)


def test_pick_diverse_prefers_the_farthest_plan_above_the_relevance_floor():
    best = selection(0, [1, 2, 3])
    near = selection(0, [1, 2, 4])  # shares 3 of 5 models with best
    far = selection(9, [5, 6])  # shares nothing, relevance 1.0 >= 0.6 x 1.5
    weak = selection(8, [7], score=0.1)  # shares nothing but too weak
    picked = pick_diverse([best, near, far, weak], 3, min_relative_relevance=0.6)
    assert picked == [best, far, near]
    assert weak not in pick_diverse([best, near, far, weak], 4, 0.6)


def test_pick_diverse_repeats_when_there_are_too_few_plans():
    only = selection(0, [1])
    assert pick_diverse([only], 3, 0.5) == [only, only, only]


def test_diverse_selections_fit_and_differ(toy_catalog, unit_rows):
    from manta.concepts import Concept
    from manta.config import MantaConfig
    from manta.index import CatalogIndex
    from manta.limits import ResolvedLimits, plan_cost
    from manta.retrieval import retrieve
    from manta.solver import CompositionProblem

    rng = np.random.default_rng(5)
    catalog = toy_catalog(rng, n_adapters=16)
    index = CatalogIndex(catalog, unit_rows(rng, len(catalog), 16))
    settings = MantaConfig(min_relevance=-1.0, adapter_penalty=0.0)
    concepts_CD = unit_rows(rng, 3, 16)
    found = retrieve(index, "p", [Concept(f"c{i}", "subject") for i in range(3)], concepts_CD[0], concepts_CD, settings)
    limits = ResolvedLimits("t", int(6e9), 3.0, 1.0, 30, 3)
    problem = CompositionProblem(index, found, limits, 2, 0.2)
    picks = diverse_selections(problem, 4, seed=0, mask_probability=0.5, pool_factor=3, min_relative_relevance=0.5)
    assert picks[0].key == problem.solve().key
    assert len({p.key for p in picks}) == 4
    for p in picks:
        cost = plan_cost(index.entry(p.base), [index.entry(c.position) for c in p.picks], limits)
        assert not cost.violations(limits)
        assert relevance_of(p) >= 0.5 * relevance_of(picks[0]) - 1e-9
    assert picks == diverse_selections(
        problem, 4, seed=0, mask_probability=0.5, pool_factor=3, min_relative_relevance=0.5
    )
