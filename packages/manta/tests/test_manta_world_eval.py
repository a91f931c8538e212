"""The whole loop on the shipped tiny world, on this CPU: compose, render with diffusers + peft LoRAs, judge
the images with the world's judge; the controls must not win alignment or quality against the composer."""

import json

import pytest
from manta.cli import app
from manta.evaluation.suite import CONTROL_LIMIT
from manta.evaluation.world_eval import WORLD_JUDGE, world_evaluation
from manta.world.build import shipped_world
from typer.testing import CliRunner

pytestmark = pytest.mark.slow
N_PROMPTS, BATCH, STEPS = 12, 2, 20


@pytest.fixture(scope="module")
def evaluation(embedder, cache_dir):
    return world_evaluation(
        shipped_world(), n_prompts=N_PROMPTS, batch=BATCH, cache_dir=str(cache_dir), embedder=embedder, num_steps=STEPS
    )


def test_controls_lose_alignment_and_quality_to_the_composer(evaluation):
    assert set(evaluation.controls) == {"prompt-blind", "random-relevant"}
    for name in evaluation.controls:
        for criterion in ("alignment", "quality"):
            rate = evaluation.control_win_rate(name, criterion)
            assert rate < CONTROL_LIMIT, (name, criterion, rate, evaluation.to_dict()["tallies"][name])


def test_the_composer_serves_the_world_prompts(evaluation):
    assert evaluation.coverage >= 0.4 and evaluation.adapters_per_image >= 1.0
    assert evaluation.to_dict()["judge"] == WORLD_JUDGE
    assert set(evaluation.opponents) == {"stylus", "stylus-limited"}


def test_eval_command_on_the_world_writes_winrates(tmp_path, cache_dir):
    out = tmp_path / "eval"
    result = CliRunner().invoke(
        app,
        [
            "eval",
            "--judge",
            "world",
            "--limit",
            "3",
            "--batch",
            "2",
            "--steps",
            "4",
            "--cache-dir",
            str(cache_dir),
            "--out",
            str(out),
        ],
    )
    assert result.exit_code == 0, result.output
    report = json.loads((out / "winrates.json").read_text())
    assert report["judge"] == WORLD_JUDGE and report["prompts"] == 3 and report["hardware"] == "tiny-cpu"
    assert set(report["controls"]) == {"prompt-blind", "random-relevant"}
    assert (out / "winrates.png").read_bytes()[:4] == b"\x89PNG"
