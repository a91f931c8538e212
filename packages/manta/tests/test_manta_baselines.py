"""The Stylus-faithful baseline (as published and under limits) and the two controls, on the shipped catalog."""

import pytest
from manta.composer import limits_from_config
from manta.evaluation.controls import PromptBlindControl, RandomRelevantControl, fitting_checkpoints
from manta.evaluation.stylus import ADAPTERS_PER_TASK, TASK_SCALE, TOP_K, StylusBaseline
from manta.plan import check_plan

PROMPT = "a dragon flying over a medieval castle at sunset, oil painting"


def test_stylus_retrieves_top_150_and_gives_each_task_at_most_three_adapters(composer):
    assert TOP_K == 150 and ADAPTERS_PER_TASK == 3
    limits = limits_from_config("laptop-8gb")
    plain = StylusBaseline(composer, masking=False).compose(PROMPT, limits, batch=2)
    assert plain[0] == plain[1]  # no masking: one plan repeated
    per_task = {}
    for adapter in plain[0].adapters:
        per_task.setdefault(adapter.concept, []).append(adapter)
    assert per_task and all(len(group) <= 3 for group in per_task.values())
    for group in per_task.values():  # a task's adapters share a total scale of 0.8 (within each one's range)
        for a in group:
            entry = composer.catalog[a.id]
            share = min(entry.weight_max, max(entry.weight_min, TASK_SCALE / len(group)))
            assert a.weight == pytest.approx(share, abs=1e-3)
    assert set(per_task) <= set(plain[0].concepts)
    # As published it ignores the machine: SDXL is picked on an 8 GiB laptop where it does not fit.
    assert plain[0].base_family == "sdxl" and check_plan(plain[0], composer.catalog, limits).violations(limits)


def test_stylus_masking_keeps_all_one_or_none_per_task(composer):
    limits = limits_from_config("desktop-24gb")
    full = StylusBaseline(composer, masking=False).compose(PROMPT, limits, batch=1)[0]
    full_ids = {a.concept: {x.id for x in full.adapters if x.concept == a.concept} for a in full.adapters}
    masked = StylusBaseline(composer).compose(PROMPT, limits, batch=12, seed=3)
    assert len({p.elements for p in masked}) > 1
    for plan in masked:
        for concept, ids in full_ids.items():
            kept = {a.id for a in plan.adapters if a.concept == concept}
            assert kept <= ids and len(kept) in {0, 1, len(ids)}


def test_stylus_limited_obeys_every_limit(composer):
    for hardware in ("laptop-8gb", "desktop-24gb"):
        limits = limits_from_config(hardware)
        for plan in StylusBaseline(composer, enforce_limits=True).compose(PROMPT, limits, batch=6, seed=1):
            assert not check_plan(plan, composer.catalog, limits).violations(limits)
            assert len(plan.adapters) <= limits.max_adapters


def test_prompt_blind_rotates_checkpoints_and_uses_no_adapter(composer):
    limits = limits_from_config("desktop-24gb")
    plans = PromptBlindControl(composer).compose(PROMPT, limits, batch=5, seed=0)
    assert all(not p.adapters for p in plans)
    assert len({p.base_id for p in plans}) == len(fitting_checkpoints(composer, limits)) == 5
    assert [p.base_id for p in PromptBlindControl(composer).compose("a cat", limits, batch=5)] == [
        p.base_id for p in plans
    ]  # the prompt changes nothing


def test_random_relevant_picks_relevant_adapters_at_random_within_limits(composer):
    limits = limits_from_config("laptop-8gb")
    control = RandomRelevantControl(composer)
    plans = control.compose(PROMPT, limits, batch=8, seed=0)
    threshold = composer.settings.min_relevance
    for plan in plans:
        assert not check_plan(plan, composer.catalog, limits).violations(limits)
        assert all(a.relevance >= threshold for a in plan.adapters)
        assert len({a.concept for a in plan.adapters}) == len(plan.adapters)  # one per concept
    assert len({p.elements for p in plans}) > 1
    assert plans == control.compose(PROMPT, limits, batch=8, seed=0)
