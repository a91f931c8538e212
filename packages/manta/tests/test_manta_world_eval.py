"""The whole loop on the shipped tiny world, on this CPU: compose, render with diffusers + peft LoRAs, judge
the images with the world's judge, whose ties are set by its own seed noise (`ImageJudge.calibrate`). A
control winning 30% of alignment or quality comparisons fails the test."""

import pytest
from manta.evaluation.world_eval import WORLD_JUDGE, world_evaluation
from manta.world.build import shipped_world

pytestmark = pytest.mark.slow
N_PROMPTS, BATCH, STEPS = 12, 2, 20


def test_the_world_evaluation_believes_the_composer(embedder, cache_dir):
    """One evaluation (computed once: it renders 120 images), every claim checked on it."""
    evaluation = world_evaluation(
        shipped_world(), n_prompts=N_PROMPTS, batch=BATCH, cache_dir=str(cache_dir), embedder=embedder, num_steps=STEPS
    )
    report = evaluation.to_dict()
    assert report["judge"] == WORLD_JUDGE and set(evaluation.opponents) == {"stylus", "stylus-limited"}
    assert set(evaluation.controls) == {"prompt-blind", "random-relevant"}
    assert evaluation.coverage >= 0.4 and evaluation.adapters_per_image >= 1.0
    assert evaluation.margins["quality"] > 0.03 and evaluation.seed_noise["quality"] > 0  # calibrated, recorded
    assert evaluation.control_violations() == [], report["tallies"]
