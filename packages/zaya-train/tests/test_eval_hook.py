"""`train.eval.downstream`: lm-eval tasks scored during a real pretraining run, recorded, plotted and summarised,
without changing what the run trains; bad task names and settings fail before the first step."""

import json

import pytest
from zaya_train.config import DataConfig, EvalConfig, SourceConfig, TrainConfig
from zaya_train.errors import ZayaTrainError
from zaya_train.evals.config import DownstreamConfig

pytest.importorskip("lm_eval")


def _records(run_dir, kind):
    return [r for r in map(json.loads, (run_dir / "metrics.jsonl").open()) if r["kind"] == kind]


@pytest.mark.slow
def test_downstream_scores_are_recorded_plotted_and_leave_training_unchanged(tmp_path, pretrain):
    downstream = {"tasks": ["zaya_stdlib_nextline", "zaya_stdlib_idio*"], "every_steps": 6, "limit": 8}
    summary = pretrain(tmp_path / "with", tmp_path / "cache", 8, **{"eval.downstream": downstream, "plots": True})
    pretrain(tmp_path / "without", tmp_path / "cache", 8)

    records = _records(tmp_path / "with", "downstream")
    assert [r["step"] for r in records] == [0, 6, 12, 16]  # first step, cadence, end of run
    for record in records:
        assert 0 <= record["zaya_stdlib_nextline/acc"] <= 1 and 0 <= record["zaya_stdlib_idioms/exact_match"] <= 1
        assert record["tokens"] > 0 or record["step"] == 0
    assert summary["downstream"] == {k: v for k, v in records[-1].items() if "/" in k}
    assert summary["plots"].count(str(tmp_path / "with" / "downstream.png")) == 1
    assert (tmp_path / "with" / "downstream.png").stat().st_size > 10_000

    # Eval mode, no router load counted, every RNG restored: the same losses, bit for bit.
    for kind, key in (("train", "loss"), ("val", "val_loss")):
        with_values = [r[key] for r in _records(tmp_path / "with", kind)]
        assert with_values == [r[key] for r in _records(tmp_path / "without", kind)] and len(with_values) >= 3


def test_an_unknown_task_fails_before_the_first_step(tmp_path, pretrain):
    with pytest.raises(
        ZayaTrainError, match=r"unknown task.*zaya_stdlib_nextlin\b.*zaya's own tasks: zaya, zaya_arith"
    ):
        pretrain(tmp_path / "run", tmp_path / "cache", 4, **{"eval.downstream": {"tasks": ["zaya_stdlib_nextlin"]}})
    assert not (tmp_path / "run" / "metrics.jsonl").exists() or not _records(tmp_path / "run", "train")


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [("every_steps", 0, "eval.downstream.every_steps = 0"), ("limit", -3, "eval.downstream.limit = -3")],
)
def test_bad_settings_are_named_with_their_full_key(field, value, message):
    train = TrainConfig(
        data=DataConfig(sources={"code": SourceConfig()}),
        eval=EvalConfig(downstream=DownstreamConfig(tasks=["zaya"], **{field: value})),
    )
    with pytest.raises(ValueError, match=message):
        train.validate()
