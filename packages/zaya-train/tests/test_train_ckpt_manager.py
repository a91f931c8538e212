"""CheckpointManager: round trip, retention, corruption fallback, async, SIGKILL mid-save, 2-rank gloo.

Real files and real processes throughout: corrupted checkpoints are made by truncating or flipping
bytes of real DCP shards, kills are real SIGKILLs, the 2-rank case runs under torchrun with gloo.
"""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
from torch.distributed.checkpoint.state_dict import get_state_dict, set_state_dict
from zaya_config.train_checkpoint.layout import read_latest, step_dirs
from zaya_train.checkpoint import CheckpointManager, CorruptCheckpointWarning


def _model_and_optim(seed: int = 0) -> tuple[torch.nn.Module, torch.optim.Optimizer]:
    torch.manual_seed(seed)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Tanh(), torch.nn.Linear(16, 4))
    return model, torch.optim.AdamW(model.parameters(), lr=1e-2)


def _train_steps(model: torch.nn.Module, optim: torch.optim.Optimizer, steps: int) -> None:
    for _ in range(steps):
        loss = model(torch.randn(5, 8)).square().mean()
        loss.backward()
        optim.step()
        optim.zero_grad()


def _state(model: torch.nn.Module, optim: torch.optim.Optimizer, step: int) -> dict:
    model_sd, optim_sd = get_state_dict(model, optim)
    return {"model": model_sd, "optim": optim_sd, "train": {"step": step, "rng": torch.get_rng_state()}}


def _flat(model: torch.nn.Module, optim: torch.optim.Optimizer) -> torch.Tensor:
    parts = [p.detach().flatten() for p in model.parameters()]
    for per_param in optim.state_dict()["state"].values():
        parts += [v.flatten().float() for v in per_param.values()]
    return torch.cat(parts)


def test_round_trip_restores_weights_optimizer_and_train_state(tmp_path: Path) -> None:
    model, optim = _model_and_optim()
    _train_steps(model, optim, 3)
    manager = CheckpointManager(tmp_path, keep_last=2)
    folder = manager.save(3, _state(model, optim, 3))
    expected = _flat(model, optim).clone()
    assert folder.name == "step_00000003" and read_latest(tmp_path) == 3
    assert (folder / "manifest.json").is_file() and not list(tmp_path.glob(".tmp.*"))

    fresh_model, fresh_optim = _model_and_optim(seed=1)
    state = _state(fresh_model, fresh_optim, 0)
    assert CheckpointManager(tmp_path).load_latest(state) == 3
    set_state_dict(fresh_model, fresh_optim, model_state_dict=state["model"], optim_state_dict=state["optim"])
    assert torch.equal(_flat(fresh_model, fresh_optim), expected)
    assert state["train"]["step"] == 3


def test_keep_last_prunes_oldest_and_empty_root_loads_nothing(tmp_path: Path) -> None:
    assert CheckpointManager(tmp_path / "none").load_latest({"train": {}}) is None
    model, optim = _model_and_optim()
    manager = CheckpointManager(tmp_path, keep_last=2)
    for step in (1, 2, 3, 4):
        _train_steps(model, optim, 1)
        manager.save(step, _state(model, optim, step))
    assert sorted(step_dirs(tmp_path)) == [3, 4]


@pytest.mark.parametrize("damage", ["truncate", "flip"])
def test_corrupt_latest_falls_back_with_warning_naming_file(tmp_path: Path, damage: str) -> None:
    model, optim = _model_and_optim()
    manager = CheckpointManager(tmp_path, keep_last=3)
    manager.save(1, _state(model, optim, 1))
    at_step_1 = _flat(model, optim).clone()
    _train_steps(model, optim, 1)
    latest = manager.save(2, _state(model, optim, 2))
    shard = max(latest.glob("*.distcp"), key=lambda p: p.stat().st_size)
    data = bytearray(shard.read_bytes())
    if damage == "truncate":
        shard.write_bytes(data[: len(data) // 2])
    else:
        data[len(data) // 2] ^= 0xFF
        shard.write_bytes(bytes(data))

    fresh_model, fresh_optim = _model_and_optim(seed=2)
    state = _state(fresh_model, fresh_optim, 0)
    with pytest.warns(CorruptCheckpointWarning, match=shard.name):
        assert CheckpointManager(tmp_path).load_latest(state) == 1
    set_state_dict(fresh_model, fresh_optim, model_state_dict=state["model"], optim_state_dict=state["optim"])
    assert torch.equal(_flat(fresh_model, fresh_optim), at_step_1)


def test_async_save_snapshots_state_at_call_time(tmp_path: Path) -> None:
    model, optim = _model_and_optim()
    _train_steps(model, optim, 2)
    manager = CheckpointManager(tmp_path, async_save=True)
    manager.save(2, _state(model, optim, 2))
    expected = _flat(model, optim).clone()
    _train_steps(model, optim, 2)  # training goes on while the save is in flight
    manager.wait()
    assert read_latest(tmp_path) == 2 and manager.timings[-1].total_s is not None
    fresh_model, fresh_optim = _model_and_optim(seed=3)
    state = _state(fresh_model, fresh_optim, 0)
    assert CheckpointManager(tmp_path).load_latest(state) == 2
    set_state_dict(fresh_model, fresh_optim, model_state_dict=state["model"], optim_state_dict=state["optim"])
    assert torch.equal(_flat(fresh_model, fresh_optim), expected)
    manager.close()


# ---------------------------------------------------------------- real processes
def _save_forever(root: str, async_save: str) -> None:
    """Worker: save a ~4 MB state whose every value equals the step, as fast as possible, until killed."""
    manager = CheckpointManager(Path(root), keep_last=2, async_save=async_save == "1")
    step = 0
    while True:
        step += 1
        value = float(step)
        state = {"model": {"w": torch.full((1 << 20,), value)}, "train": {"step": step}}
        manager.save(step, state)
        print(step, flush=True)


@pytest.mark.slow
@pytest.mark.parametrize("async_save", ["0", "1"])
def test_sigkill_during_saves_never_leaves_a_bad_latest(tmp_path: Path, async_save: str) -> None:
    delays = [0.2, 0.6, 1.1]
    for round_, delay in enumerate(delays):
        proc = subprocess.Popen(
            [sys.executable, __file__, "save_forever", str(tmp_path), async_save],
            stdout=subprocess.PIPE,
            env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
        )
        assert proc.stdout is not None
        proc.stdout.readline()  # the first save completed: imports are done, saves are now back to back
        time.sleep(delay)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        state = {"model": {"w": torch.zeros(1 << 20)}, "train": {}}
        step = CheckpointManager(tmp_path).load_latest(state)
        assert step is not None, f"round {round_}: nothing loadable after SIGKILL"
        assert state["train"]["step"] == step
        assert torch.equal(state["model"]["w"], torch.full((1 << 20,), float(step)))


def _two_rank_worker(root: str) -> None:
    """Worker under torchrun: ranks save different train state, rank 1's shard is corrupted, both fall back."""
    import torch.distributed as dist

    dist.init_process_group("gloo")
    rank = dist.get_rank()
    manager = CheckpointManager(Path(root), keep_last=3, async_save=rank >= 0)
    for step in (1, 2):
        manager.save(step, {"model": {f"w{rank}": torch.full((64,), float(step + 10 * rank))}, "train": {"r": rank}})
    manager.wait()
    dist.barrier()
    if rank == 0:
        shard = Path(root) / "step_00000002" / "__1_0.distcp"
        shard.write_bytes(shard.read_bytes()[:-7])
    dist.barrier()
    state = {"model": {f"w{rank}": torch.zeros(64)}, "train": {}}
    step = CheckpointManager(Path(root)).load_latest(state)
    assert step == 1, step
    assert state["train"] == {"r": rank}
    assert torch.equal(state["model"][f"w{rank}"], torch.full((64,), float(1 + 10 * rank)))
    print(f"rank {rank} ok", flush=True)
    dist.destroy_process_group()


@pytest.mark.distributed
def test_two_rank_gloo_save_and_fallback(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2",
         __file__, "two_rank", str(tmp_path)],
        capture_output=True, text=True, timeout=120,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    assert "rank 0 ok" in result.stdout and "rank 1 ok" in result.stdout
    assert "__1_0.distcp" in result.stderr  # the warning names the bad file


if __name__ == "__main__":
    {"save_forever": _save_forever, "two_rank": _two_rank_worker}[sys.argv[1]](*sys.argv[2:])
