"""The trainer's fast path on CPU: compiled blocks (aot_eager) train like eager ones, activation checkpointing
leaves the gradients unchanged and counts the router load once, bad settings stop at start, and a batch-size
ramp is followed exactly, also across a resume inside it."""

import pytest
import torch
from torch import nn
from zaya_train.config import CheckpointConfig
from zaya_train.errors import ZayaTrainError
from zaya_train.metrics import read_metrics
from zaya_train.recipe import BatchRampConfig, PhaseConfig, ScheduleConfig, ramped_batch_size


def _train_losses(run_dir):
    return [r["loss"] for r in read_metrics(run_dir / "metrics.jsonl") if r["kind"] == "train"]


def _one_step_grads(trainer):
    batch = trainer.sampler.next_batch(trainer.global_batch_size())
    trainer.optimizer.zero_grad(set_to_none=True)
    loss = trainer._loss(trainer.wrapped, torch.from_numpy(batch))
    loss.backward()
    grads = {n: p.grad.clone() for n, p in trainer.model.named_parameters() if p.grad is not None}
    return float(loss.detach()), grads, trainer.model._load_counts().clone()


@pytest.mark.parametrize("mode", ["selective", "full"])
def test_activation_checkpointing_gives_identical_gradients_and_counts_once(make_trainer, tmp_path, mode):
    ref = make_trainer(max_steps=1, run_dir=tmp_path / "none")
    ckpt = make_trainer(max_steps=1, run_dir=tmp_path / mode, activation_checkpointing=mode)
    for trainer in (ref, ckpt):
        trainer._enter_next()
    loss_ref, grads_ref, counts_ref = _one_step_grads(ref)
    loss, grads, counts = _one_step_grads(ckpt)
    assert loss == loss_ref
    assert grads.keys() == grads_ref.keys()
    for name, g in grads_ref.items():
        assert torch.equal(grads[name], g), name
    # the recomputation in backward does not count the tokens a second time
    assert torch.equal(counts, counts_ref) and float(counts.sum()) > 0


def test_activation_checkpointing_keeps_parameter_names(make_trainer):
    trainer = make_trainer(max_steps=1, activation_checkpointing="full")
    assert all("checkpoint" not in name for name in trainer.model.state_dict())


@pytest.mark.slow
def test_compiled_blocks_train_like_eager_ones(make_trainer, tmp_path):
    """aot_eager compiles the blocks and the loss kernel without generating code (inductor is slow on CPU)."""
    torch._dynamo.reset()
    eager = make_trainer(max_steps=3, run_dir=tmp_path / "eager", compile=False)
    compiled = make_trainer(max_steps=3, run_dir=tmp_path / "compiled", compile=True, compile_backend="aot_eager")
    assert compiled.compiled and not eager.compiled
    assert all(layer._compiled_call_impl is not None for layer in compiled.model.layers)
    eager.run()
    compiled.run()
    assert _train_losses(tmp_path / "compiled") == pytest.approx(_train_losses(tmp_path / "eager"), rel=1e-5)
    names = list(eager.model.state_dict())
    assert list(compiled.model.state_dict()) == names  # compiled in place: checkpoints keep their names


def test_compile_defaults_off_on_cpu(make_trainer):
    assert make_trainer(max_steps=1).compiled is False


def test_compile_that_cannot_work_here_stops_at_start_naming_the_fix(make_trainer, tmp_path, monkeypatch):
    empty = tmp_path / "empty-path"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))  # no C++ compiler for inductor's CPU code
    monkeypatch.setenv("CXX", "no-such-compiler")
    with pytest.raises(ZayaTrainError, match=r"needs a C\+\+ compiler.*set train\.compile=false"):
        make_trainer(max_steps=1, compile=True, compile_backend="inductor")


def test_checkpointing_a_model_without_blocks_is_refused():
    from zaya_train.distributed import parallelize
    from zaya_train.distributed.setup import DistributedContext

    ctx = DistributedContext(0, 0, 1, torch.device("cpu"), "single")
    with pytest.raises(ZayaTrainError, match=r"set train\.activation_checkpointing=none"):
        parallelize(nn.Linear(4, 4), ctx, activation_checkpointing="full")


def test_unknown_checkpointing_mode_is_named():
    from zaya_config.errors import ZayaConfigError
    from zaya_train.config import TrainConfig

    with pytest.raises(ZayaConfigError, match=r"activation_checkpointing.*'selectve'.*none"):
        TrainConfig(activation_checkpointing="selectve").validate()


# ------------------------------------------------------------------ batch-size ramp
def test_ramped_batch_size_grows_linearly_in_whole_granules():
    ramp = BatchRampConfig(start_global_batch_size=4, tokens=1000)
    sizes = [ramped_batch_size(ramp, 16, 4, t) for t in (0, 249, 250, 500, 999, 1000, 5000)]
    assert sizes == [4, 4, 4, 8, 12, 16, 16]
    assert ramped_batch_size(None, 16, 4, 0) == 16


def _ramp_phase(seq_len=32):
    return [
        PhaseConfig(
            name="ramp",
            tokens=60 * 8 * seq_len,
            seq_len=seq_len,
            global_batch_size=8,
            batch_ramp=BatchRampConfig(start_global_batch_size=2, tokens=3 * 8 * seq_len),
            mixture={"json": 1.0, "email": 1.0},
            schedule=ScheduleConfig(kind="constant", peak_lr=3e-3, warmup_fraction=0.0),
        )
    ]


def test_a_phase_ramps_its_batch_and_a_resume_inside_the_ramp_is_bitwise_exact(make_trainer, tmp_path):
    ckpt = CheckpointConfig(enabled=True, every_steps=4, keep_last=2)
    kw = dict(phases=_ramp_phase(), micro_batch_size=2, global_batch_size=8, checkpoint=ckpt)
    ref = make_trainer(max_steps=10, run_dir=tmp_path / "ref", **kw)
    ref.log_every = 1
    ref.run()
    batches = [r["global_batch"] for r in read_metrics(tmp_path / "ref" / "metrics.jsonl") if r["kind"] == "train"]
    assert batches == [2, 2, 2, 2, 4, 4, 6, 6, 8, 8]
    cut = make_trainer(max_steps=4, run_dir=tmp_path / "cut", **kw)
    cut.log_every = 1
    cut.run()
    cut.close()
    resumed = make_trainer(max_steps=10, run_dir=tmp_path / "cut", **kw)
    resumed.log_every = 1
    resumed.run()
    assert _train_losses(tmp_path / "cut")[-6:] == _train_losses(tmp_path / "ref")[-6:]
    ref_weights, got = ref.model.state_dict(), resumed.model.state_dict()
    for name, value in ref_weights.items():
        assert torch.equal(got[name], value), name


def test_a_ramp_start_that_does_not_split_into_micro_batches_is_refused(make_trainer):
    phases = _ramp_phase()
    phases[0].batch_ramp = BatchRampConfig(start_global_batch_size=3, tokens=1000)
    with pytest.raises(ZayaTrainError, match=r"start_global_batch_size 3 .* multiple of micro_batch_size 2"):
        make_trainer(phases=phases, micro_batch_size=2, global_batch_size=8)


@pytest.mark.gpu
@pytest.mark.parametrize("compile_blocks", [False, None], ids=["eager", "compiled-default"])
def test_a_step_reads_the_host_once_outside_logging_steps(make_trainer, compile_blocks):
    """On CUDA a non-logging step synchronises once (the anomaly guard's loss and grad norm); logging steps add
    the expert-load and timer reads. Counted with CUDA's sync debug mode."""
    import warnings

    trainer = make_trainer(max_steps=4, device="cuda", precision="bf16", compile=compile_blocks)
    trainer._enter_next()
    trainer.log_every = 1000
    for _ in range(2):  # warm-up (compilation, allocator)
        trainer.train_step(trainer.sampler.next_batch(trainer.global_batch_size()))
    trainer.progress.step = 5  # step 6 is not a logging step
    batch = trainer.sampler.next_batch(trainer.global_batch_size())
    torch.cuda.synchronize()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        torch.cuda.set_sync_debug_mode("warn")
        try:
            metrics = trainer.train_step(batch)
        finally:
            torch.cuda.set_sync_debug_mode(0)
    syncs = [f"{w.filename}:{w.lineno}: {w.message}" for w in caught if "called a synchronizing" in str(w.message)]
    assert len(syncs) == 1, "\n".join(syncs)
    assert "optimizer_ms" not in metrics and "expert_load" not in metrics
