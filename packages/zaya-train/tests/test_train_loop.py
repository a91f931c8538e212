"""The training loop on the real zaya1-tiny: gradient accumulation, bf16 autocast, metrics, plots,
sample generation, and resume from a checkpoint continuing exactly."""

import json

import pytest
import torch
from zaya_train.config import CheckpointConfig, EvalConfig
from zaya_train.metrics import read_metrics


def _weights(trainer):
    return {k: v.detach().clone() for k, v in trainer.model.state_dict().items()}


def test_gradient_accumulation_matches_one_big_micro_batch(make_trainer, tmp_path):
    a = make_trainer(micro_batch_size=1, max_steps=3, run_dir=tmp_path / "a")
    b = make_trainer(micro_batch_size=4, max_steps=3, run_dir=tmp_path / "b")
    a.run()
    b.run()
    la = [r["loss"] for r in read_metrics(tmp_path / "a" / "metrics.jsonl") if r["kind"] == "train"]
    lb = [r["loss"] for r in read_metrics(tmp_path / "b" / "metrics.jsonl") if r["kind"] == "train"]
    assert la == pytest.approx(lb, rel=1e-5)
    wa, wb = _weights(a), _weights(b)
    for key in wa:
        assert torch.allclose(wa[key], wb[key], atol=1e-5), key


def test_run_writes_metrics_plots_and_a_sample(make_trainer, tmp_path):
    trainer = make_trainer(max_steps=12, plots=True, eval=EvalConfig(every_steps=6, sequences=4, sample_tokens=16))
    trainer.log_every = 3
    summary = trainer.run()
    run = tmp_path / "run"
    records = read_metrics(run / "metrics.jsonl")
    train = [r for r in records if r["kind"] == "train"]
    assert [r["step"] for r in train] == [1, 3, 6, 9, 12]
    for key in ("loss", "grad_norm", "lr", "tokens_per_s", "mfu", "expert_load", "skip_rate"):
        assert key in train[-1], key
    load = torch.tensor(train[-1]["expert_load"])
    assert load.shape == (2, 5) and torch.allclose(load.sum(-1), torch.ones(2))
    vals = [r for r in records if r["kind"] == "val"]
    assert [r["step"] for r in vals] == [0, 6, 12, 12]
    assert vals[-1]["val_loss"] < vals[0]["val_loss"]
    assert {"val_loss/json", "val_loss/email"} <= vals[0].keys()
    assert summary["sample"].startswith("def ") and len(summary["sample"]) > 4
    assert (run / "loss.png").stat().st_size > 1000 and (run / "expert_load.png").stat().st_size > 1000


def test_bf16_autocast_keeps_fp32_master_weights(make_trainer):
    trainer = make_trainer(precision="bf16", max_steps=2)
    summary = trainer.run()
    assert all(p.dtype == torch.float32 for p in trainer.model.parameters())
    assert torch.isfinite(torch.tensor(summary["final_train_loss"]))


def test_resume_from_checkpoint_continues_exactly(make_trainer, tmp_path):
    ckpt = CheckpointConfig(enabled=True, every_steps=2, keep_last=2)
    ref = make_trainer(max_steps=4, checkpoint=ckpt, run_dir=tmp_path / "ref")
    ref.run()
    first = make_trainer(max_steps=2, checkpoint=ckpt, run_dir=tmp_path / "cut")
    first.run()
    first.close()
    second = make_trainer(max_steps=4, checkpoint=ckpt, run_dir=tmp_path / "cut")
    assert second.resume() and second.progress.step == 2
    summary = second.run()
    assert summary["steps"] == 4
    w_ref, w_cut = _weights(ref), _weights(second)
    for key in w_ref:
        assert torch.equal(w_ref[key], w_cut[key]), key
    losses = lambda d: [r["loss"] for r in read_metrics(d / "metrics.jsonl") if r["kind"] == "train"]  # noqa: E731
    assert losses(tmp_path / "cut")[-1] == losses(tmp_path / "ref")[-1]
    saved = json.loads((tmp_path / "cut" / "checkpoints" / "step_00000004" / "manifest.json").read_text())
    assert saved["step"] == 4


def test_metrics_writer_jsonl_and_tensorboard(tmp_path):
    from zaya_train.metrics import MetricsWriter

    writer = MetricsWriter(tmp_path, tensorboard=True)
    writer.write({"kind": "train", "step": 1, "loss": float("nan"), "lr": 1e-3})
    writer.write({"kind": "val", "step": 1, "val_loss": 2.0})
    writer.close()
    records = read_metrics(tmp_path / "metrics.jsonl")
    assert records[0]["loss"] is None and records[1]["val_loss"] == 2.0  # NaN stays valid JSON
    assert list((tmp_path / "tensorboard").glob("events.out.tfevents.*"))
    with open(tmp_path / "metrics.jsonl", "a") as f:
        f.write('{"kind": "tra')  # the torn last line of a killed run
    assert len(read_metrics(tmp_path / "metrics.jsonl")) == 2


def test_run_history_drops_what_a_resume_redid(tmp_path):
    """A killed attempt logged steps 1-6 but its last checkpoint was step 4: the resumed attempt's records
    replace steps 5-6 in the history (plots read it); metrics.jsonl keeps every line."""
    from zaya_train.metrics import MetricsWriter, plot_run, run_history

    writer = MetricsWriter(tmp_path)
    writer.write({"kind": "phase", "step": 0, "tokens": 0, "name": "p", "resumed": False})
    for step in range(1, 7):
        writer.write({"kind": "train", "step": step, "tokens": 10 * step, "loss": 10.0 - step})
    writer.write({"kind": "val", "step": 6, "tokens": 60, "val_loss": 4.5})
    writer.write({"kind": "phase", "step": 4, "tokens": 40, "name": "p", "resumed": True})
    for step in (5, 6):
        writer.write({"kind": "train", "step": step, "tokens": 10 * step, "loss": 1.0})
    writer.close()
    records = read_metrics(tmp_path / "metrics.jsonl")
    history = run_history(records)
    assert len(records) == 11 and len(history) == 8
    assert [(r["step"], r["loss"]) for r in history if r["kind"] == "train"] == [
        (1, 9.0), (2, 8.0), (3, 7.0), (4, 6.0), (5, 1.0), (6, 1.0)
    ]  # fmt: skip
    assert not [r for r in history if r["kind"] == "val"]  # the lost attempt's step-6 validation is gone
    assert tmp_path / "loss.png" in plot_run(tmp_path)
