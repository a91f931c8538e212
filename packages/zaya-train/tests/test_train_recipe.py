"""Phased recipes: budgets that add up, checks against model and data before any step, and the trainer
switching context length and RoPE theta at the right token."""

import json

import pytest
from zaya_config import ZayaConfigError, compose
from zaya_train.config import DataConfig, SourceConfig
from zaya_train.errors import ZayaTrainError
from zaya_train.hooks import TrainerHook
from zaya_train.recipe import PhaseConfig, RecipeConfig, ScheduleConfig


def _phase(name, tokens, seq_len, theta=1e4, **kw):
    return PhaseConfig(
        name=name,
        tokens=tokens,
        seq_len=seq_len,
        rope_theta=theta,
        mixture=kw.pop("mixture", {"json": 1.0, "email": 1.0}),
        **kw,
    )


def test_presets_compose_and_validate():
    base = compose("zaya", ["+recipe=zaya1-base", "+train=zaya1-base"])
    phases = base.recipe.phases
    assert [p.seq_len for p in phases] == [4096, 4096, 32768]
    assert phases[-1].rope_theta == 1e6 and phases[0].rope_theta == 1e4
    assert sum(p.tokens for p in phases) == base.recipe.total_tokens == 14 * 10**12
    assert set().union(*[p.mixture.keys() for p in phases]) <= set(base.train.data.sources)
    tiny = compose("zaya", ["+recipe=tiny-cpu", "+train=tiny-cpu"])
    assert [p.seq_len for p in tiny.recipe.phases] == [128, 256]


def test_budgets_that_do_not_add_up_fail_at_compose():
    with pytest.raises(ZayaConfigError, match=r"recipe\.total_tokens = 5; allowed: the sum of the phase budgets"):
        compose("zaya", ["+recipe=tiny-cpu", "recipe.total_tokens=5"])
    with pytest.raises(ZayaConfigError, match=r"recipe\.phases\[1\]\.seq_len"):
        compose("zaya", ["+recipe=tiny-cpu", "recipe.phases.1.seq_len=0"])
    with pytest.raises(ZayaConfigError, match="unique names"):
        RecipeConfig(phases=[_phase("a", 10, 8), _phase("a", 10, 8)]).validate()


def test_phase_lookup_at_token_boundaries():
    recipe = RecipeConfig(phases=[_phase("a", 100, 8), _phase("b", 50, 8)])
    assert recipe.boundaries() == [100, 150]
    assert [recipe.phase_at(t) for t in (0, 99, 100, 149, 150)] == [0, 0, 1, 1, 2]
    assert recipe.phase_start(1) == 100


@pytest.mark.parametrize(
    ("phases", "kwargs", "message"),
    [
        ([_phase("long", 10**6, 512)], {}, "exceeds the model's 256 positions"),
        ([_phase("x", 10**6, 32, mixture={"web": 1.0})], {}, r"unknown sources \['web'\]"),
        ([_phase("short", 100, 32)], {}, "less than one step"),
        ([_phase("odd", 10**6, 32, global_batch_size=3)], {}, "not a multiple of micro_batch_size"),
        (
            None,
            {"data": DataConfig(sources={"json": SourceConfig(path="/nonexistent/corpus"), "email": SourceConfig()})},
            "does not exist",
        ),
    ],
    ids=["seq-beyond-positions", "unknown-source", "budget-below-one-step", "batch-layout", "missing-data"],
)
def test_bad_input_fails_before_any_step(make_trainer, phases, kwargs, message):
    with pytest.raises(ZayaTrainError, match=message):
        make_trainer(phases=phases, **kwargs)


def test_trainer_switches_context_length_and_theta_at_the_right_token(make_trainer, tmp_path):
    # p0's budget is not a multiple of its step (4 x 32 = 128 tokens): the switch comes at the first step
    # starting at or after 400 tokens, i.e. after 4 steps (512 tokens).
    phases = [
        _phase("short-ctx", 400, 32, 1e4, schedule=ScheduleConfig(kind="constant", peak_lr=1e-3)),
        _phase(
            "long-ctx",
            2 * 4 * 64,
            64,
            1e5,
            mixture={"email": 1.0},
            schedule=ScheduleConfig(kind="wsd", peak_lr=1e-3, end_lr=1e-4, warmup_fraction=0.0, decay_fraction=1.0),
        ),
    ]
    trainer = make_trainer(phases=phases)
    seen = []

    class Probe(TrainerHook):  # a hook: records what each step trains on
        def before_step(self, t):
            seen.append((t.progress.step, t.progress.tokens, t.sampler.seq_len, t.model.config.rope_theta))

    trainer.hooks.append(Probe())
    summary = trainer.run()
    assert seen == [
        (0, 0, 32, 1e4),
        (1, 128, 32, 1e4),
        (2, 256, 32, 1e4),
        (3, 384, 32, 1e4),
        (4, 512, 64, 1e5),
        (5, 768, 64, 1e5),
    ]
    assert summary["tokens"] == 1024 and summary["steps"] == 6
    records = [json.loads(line) for line in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    switches = [(r["name"], r["tokens"], r["seq_len"], r["rope_theta"]) for r in records if r["kind"] == "phase"]
    assert switches == [("short-ctx", 0, 32, 1e4), ("long-ctx", 512, 64, 1e5)]
    assert trainer.sampler.drawn == {"email": 8}  # phase 2 drew only from its mixture
