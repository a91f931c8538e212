"""The whole pipeline on the shipped catalog with the real embedding model, under real hardware presets."""

import itertools
import json

import pytest
from manta.composer import Composer, limits_from_config
from manta.config import MantaConfig
from manta.errors import MantaError
from manta.evaluation.metrics import batch_diversity
from manta.limits import ResolvedLimits
from manta.plan import check_plan, jaccard_distance, plans_to_json

PROMPT = "a watercolor painting of a cat wearing a top hat"


def test_laptop_gets_an_sd15_plan_with_the_right_adapters(composer):
    limits = limits_from_config("laptop-8gb")
    [plan] = composer.compose(PROMPT, limits, batch=1)
    assert plan.base_family == "sd15"  # SDXL (9.5 GB) does not fit 8 GiB
    ids = {a.id for a in plan.adapters}
    assert {"cat-breeds", "watercolor-wash"} <= ids
    assert len(plan.adapters) <= limits.max_adapters
    assert not check_plan(plan, composer.catalog, limits).violations(limits)
    assert all(
        composer.catalog[a.id].weight_min <= a.weight <= composer.catalog[a.id].weight_max for a in plan.adapters
    )
    assert "felis" in plan.prompt_text and "wtrclr" in plan.prompt_text  # trigger words appended
    assert plan.llm_tokens == 0


def test_a_bigger_machine_affords_sdxl_and_more_concepts(composer):
    small = composer.compose(PROMPT, limits_from_config("laptop-8gb"), batch=1)[0]
    big = composer.compose(PROMPT, limits_from_config("desktop-24gb"), batch=1)[0]
    assert big.base_family == "sdxl"
    assert "hat-fashion-xl" in {a.id for a in big.adapters}  # only SDXL has a hat adapter
    assert big.relevance > small.relevance


def test_each_concept_gets_at_most_k_adapters_and_each_adapter_is_used_once(composer):
    limits = limits_from_config("h200")
    for plan in composer.compose("a dragon flying over a medieval castle at sunset, oil painting", limits, batch=4):
        per_concept = [a.concept for a in plan.adapters]
        assert max((per_concept.count(c) for c in set(per_concept)), default=0) <= 2
        assert len({a.id for a in plan.adapters}) == len(plan.adapters)


def test_batch_plans_are_valid_and_different(composer):
    # No style in the prompt and equally relevant adapters in two families: the batch can vary.
    prompt = "a giant robot walking through a neon city at night"
    limits = limits_from_config("desktop-24gb")
    plans = composer.compose(prompt, limits, batch=4, seed=0)
    assert len(plans) == 4
    for plan in plans:
        assert not check_plan(plan, composer.catalog, limits).violations(limits)
    assert len({p.elements for p in plans}) == 4
    assert min(jaccard_distance(a.elements, b.elements) for a, b in itertools.combinations(plans, 2)) > 0
    best = plans[0]
    assert all(p.relevance >= 0.6 * best.relevance - 1e-9 for p in plans)
    assert batch_diversity(plans) > 0.3
    assert plans == composer.compose(prompt, limits, batch=4, seed=0)  # seeded


PRICES = {"sdxl-artisan": 0.004, "studio-portrait-pro": 0.01, "dragon-xl": 0.002, "oil-master-xl": 0.008}


def test_cost_budget_keeps_paid_models_out(example_index, embedder):
    """Prices are the user's input (a shipped catalog has none); with them, a budget of 0 keeps paid models out."""
    from manta.catalog import with_prices
    from manta.index import CatalogIndex

    assert all(e.price_per_image == 0 for e in example_index.catalog.entries)
    priced = with_prices(example_index.catalog, PRICES)
    composer = Composer(CatalogIndex(priced, example_index.embeddings_ND), embedder, MantaConfig(prices=PRICES))
    limits = limits_from_config("desktop-24gb")
    free = limits.with_cost_budget(0.0)
    for plan in composer.compose("an oil painting of a castle", free, batch=3):
        assert plan.price == 0.0
    paid = composer.compose("an oil painting of a castle", limits, batch=1)[0]
    assert paid.price > 0  # without the budget, the paid old-master LoRA / artisan base are worth it
    with pytest.raises(MantaError, match="no such id"):
        with_prices(example_index.catalog, {"nope": 1.0})


def test_infeasible_hardware_names_the_binding_limit(composer):
    limits = ResolvedLimits(
        "pocket", vram_budget_bytes=2 * 10**9, latency_budget_s=60, latency_scale=1.0, num_steps=30, max_adapters=2
    )
    with pytest.raises(MantaError, match=r"vram limit binds.*2.00 GB.*'sd15-base', needs 2.85 GB"):
        composer.compose(PROMPT, limits)


def test_empty_prompt_fails_before_any_work(composer):
    with pytest.raises(MantaError, match="the prompt is empty"):
        composer.compose("  ", limits_from_config("cpu"))


def test_plans_serialise_to_json(composer):
    plans = composer.compose(PROMPT, limits_from_config("cpu"), batch=2)
    data = json.loads(plans_to_json(plans))
    assert data[0]["base_id"] == plans[0].base_id and data[0]["hardware"] == "cpu"
    assert len(data[0]["adapters"]) <= 2  # the cpu preset allows 2


def test_settings_validate():
    from zaya_config import ZayaConfigError

    with pytest.raises(ZayaConfigError, match=r"mask_probability = 2.0; allowed: a number in \[0.0, 1.0\]"):
        MantaConfig(mask_probability=2.0).validate()
