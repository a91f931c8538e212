"""The exact solver against brute-force enumeration, the limits, and infeasibility messages."""

import itertools

import numpy as np
import pytest
from manta.concepts import Concept
from manta.config import MantaConfig
from manta.errors import MantaError
from manta.index import CatalogIndex, topk_rows
from manta.limits import ResolvedLimits, plan_cost
from manta.retrieval import retrieve, triplet_scores
from manta.solver import CompositionProblem

DIM = 16
SETTINGS = MantaConfig(
    candidates_per_concept=4,
    adapters_per_concept=2,
    min_relevance=-1.0,
    separation_weight=0.3,
    coverage_bonus=0.2,
    adapter_penalty=0.0,
)


def make_problem(seed, toy_catalog, unit_rows, limits, settings=SETTINGS, concepts=3):
    rng = np.random.default_rng(seed)
    catalog = toy_catalog(rng, n_adapters=10)
    index = CatalogIndex(catalog, unit_rows(rng, len(catalog), DIM))
    concept_list = [Concept(f"c{i}", "subject") for i in range(concepts)]
    concepts_CD = unit_rows(rng, concepts, DIM)
    found = retrieve(index, "p", concept_list, unit_rows(rng, 1, DIM)[0], concepts_CD, settings)
    problem = CompositionProblem(
        index, found, limits, settings.adapters_per_concept, settings.coverage_bonus, settings.adapter_penalty
    )
    return index, found, problem


def brute_force(index, found, limits, settings):
    """Best objective over every base and every subset of candidates that respects all constraints."""
    best = -np.inf
    cands = found.candidates
    for base_pos, base_score in found.base_scores.items():
        base = index.entry(base_pos)
        for size in range(0, min(limits.max_adapters, len(cands)) + 1):
            for subset in itertools.combinations(cands, size):
                entries = [index.entry(c.position) for c in subset]
                if any(e.base_family != base.base_family for e in entries):
                    continue
                if len({c.position for c in subset}) < size:
                    continue
                per_concept = np.bincount([c.concept for c in subset], minlength=len(found.concepts))
                if (per_concept > settings.adapters_per_concept).any():
                    continue
                if plan_cost(base, entries, limits).violations(limits):
                    continue
                value = base_score + sum(c.score for c in subset) + settings.coverage_bonus * (per_concept > 0).sum()
                best = max(best, value)
    return best


LIMITS = ResolvedLimits(
    "toy",
    vram_budget_bytes=int(5.5e9),
    latency_budget_s=2.0,
    latency_scale=1.0,
    num_steps=30,
    max_adapters=3,
    cost_budget=0.012,
)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("method", ["solve", "solve_milp"])
def test_optimum_equals_brute_force(seed, method, toy_catalog, unit_rows):
    index, found, problem = make_problem(seed, toy_catalog, unit_rows, LIMITS)
    selection = getattr(problem, method)()
    assert selection.objective == pytest.approx(brute_force(index, found, LIMITS, SETTINGS), abs=1e-6)
    base = index.entry(selection.base)
    entries = [index.entry(c.position) for c in selection.picks]
    assert not plan_cost(base, entries, LIMITS).violations(LIMITS)
    assert all(e.base_family == base.base_family for e in entries)
    assert len({c.position for c in selection.picks}) == len(selection.picks)


def test_tighter_limits_never_raise_the_objective(toy_catalog, unit_rows):
    loose = ResolvedLimits("loose", int(50e9), 100.0, 1.0, 30, 8)
    values = []
    for vram in (50e9, 6e9, 5e9):
        limits = ResolvedLimits("t", int(vram), loose.latency_budget_s, 1.0, 30, 8)
        values.append(make_problem(1, toy_catalog, unit_rows, limits)[2].solve().objective)
    assert values[0] >= values[1] >= values[2]


def test_max_adapters_zero_gives_the_best_base_alone(toy_catalog, unit_rows):
    limits = ResolvedLimits("none", int(50e9), 100.0, 1.0, 30, 0)
    _, found, problem = make_problem(2, toy_catalog, unit_rows, limits)
    selection = problem.solve()
    assert selection.picks == ()
    assert found.base_scores[selection.base] == max(found.base_scores.values())


def test_masks_exclude_candidates_and_bases(toy_catalog, unit_rows):
    limits = ResolvedLimits("loose", int(50e9), 100.0, 1.0, 30, 8)
    _, _, problem = make_problem(3, toy_catalog, unit_rows, limits)
    best = problem.solve()
    assert best.picks
    allowed = np.array([c.position not in {p.position for p in best.picks} for c in problem.candidates])
    other = problem.solve(allowed=allowed)
    assert not {p.position for p in other.picks} & {p.position for p in best.picks}
    bases = np.array([b != best.base for b in problem.bases])
    assert problem.solve(allowed_bases=bases).base != best.base


@pytest.mark.parametrize(
    ("limits", "message"),
    [
        (
            ResolvedLimits("tiny-vram", int(1e9), 100.0, 1.0, 30, 3),
            r"the vram limit binds: manta_hardware.vram_budget_bytes allows 1.00 GB .*profile 'tiny-vram'",
        ),
        (
            ResolvedLimits("slow", int(50e9), 0.1, 1.0, 30, 3),
            r"the latency limit binds: manta_hardware.latency_budget_s allows 0.10 s",
        ),
        (
            ResolvedLimits("poor", int(50e9), 100.0, 1.0, 30, 3, cost_budget=-1.0),
            r"the cost limit binds: manta.cost_budget allows -1.0000 per image",
        ),
    ],
)
def test_infeasible_limits_name_the_binding_limit(toy_catalog, unit_rows, limits, message):
    with pytest.raises(MantaError, match=message):
        make_problem(0, toy_catalog, unit_rows, limits)


def test_limits_that_bind_only_together_are_named_together(toy_catalog, unit_rows):
    rng = np.random.default_rng(0)
    catalog = toy_catalog(rng, n_adapters=4)
    bases = sorted(catalog.checkpoints, key=lambda e: e.vram_bytes)
    # A VRAM budget only the smallest base meets, and a latency budget just under that base's latency.
    smallest = bases[0]
    vram = smallest.vram_bytes
    faster = min(b.step_latency_ms for b in bases if b.vram_bytes > vram) if len(bases) > 1 else None
    if faster is None or faster >= smallest.step_latency_ms:
        pytest.skip("toy catalog draw has its smallest base also fastest")
    latency = 30 * (faster + smallest.step_latency_ms) / 2 / 1000
    limits = ResolvedLimits("pair", vram, latency, 1.0, 30, 3)
    with pytest.raises(MantaError, match="the vram and latency limits bind together"):
        make_problem(0, toy_catalog, unit_rows, limits)


def test_topk_rows_matches_a_full_sort():
    rng = np.random.default_rng(0)
    scores = rng.normal(size=(3, 50)).astype(np.float32)
    cols, vals = topk_rows(scores, 7)
    expected = np.argsort(-scores, axis=1)[:, :7]
    assert (cols == expected).all()
    assert np.allclose(vals, np.take_along_axis(scores, expected, axis=1))
    assert topk_rows(scores, 80)[0].shape == (3, 50)


def test_triplet_score_penalises_similarity_to_other_concepts():
    concepts = np.eye(3, dtype=np.float32)
    adapters = np.array([[1, 0, 0], [0.8, 0.6, 0]], dtype=np.float32)  # pure concept 0; concept 0 mixed with 1
    relevance, score = triplet_scores(adapters, np.array([0, 0]), concepts, separation=0.5)
    assert relevance[0] == pytest.approx(1.0) and score[0] == pytest.approx(1.0)
    assert relevance[1] == pytest.approx(0.8) and score[1] == pytest.approx(0.8 - 0.5 * 0.6)


@pytest.mark.parametrize("seed", range(12))
def test_decomposed_solve_matches_the_milp_under_masks_and_other_scores(seed, toy_catalog, unit_rows):
    """Tight and loose limits, random masks and penalised scores: both exact methods agree."""
    rng = np.random.default_rng(100 + seed)
    limits = LIMITS if seed % 2 else ResolvedLimits("loose", int(50e9), 100.0, 1.0, 30, 4)
    _, _, problem = make_problem(seed, toy_catalog, unit_rows, limits, concepts=2 + seed % 3)
    B, J, _ = problem.shape
    for _ in range(3):
        scores = problem.scores - rng.uniform(0, 0.4, size=J)
        allowed = rng.random(J) < 0.7
        bases = rng.random(B) < 0.7
        bases[rng.integers(B)] = True
        fast = problem.solve(scores=scores, allowed=allowed, allowed_bases=bases)
        exact = problem.solve_milp(scores=scores, allowed=allowed, allowed_bases=bases)
        assert fast.objective == pytest.approx(exact.objective, abs=1e-6)
        assert all(allowed[problem.candidates.index(c)] for c in fast.picks)
        assert bases[problem.bases.index(fast.base)]
