"""A zaya-train checkpoint reshaped to another world size resumes training: 2 ranks train (FSDP2, or DDP with
ZeRO-1, whose optimizer state zaya-train saves by parameter name), `zaya ckpt convert --layout dp=3[,fsdp=1]`
reshapes their step-3 checkpoint, 3 ranks resume from it with the source's logical weights (and, under
ZeRO-1, its optimizer state, re-partitioned) and continue with the losses the 2-rank run had. Both
strategies run in one launch of the 3 processes, one after the other (the module's fixture, cached)."""

import math
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
from ckpt_reshape.formats import open_checkpoint
from ckpt_reshape.train_state import load_train_state
from ckpt_reshape.verify import compare, verify

pytest.importorskip("zaya_train")
WORKER = Path(__file__).with_name("ckpt_reshape_train_worker.py")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _launch(work: Path, world: int, strategies: list[str], timeout_s: float = 600) -> None:
    """Start `world` ranks with torchrun's variables; fail fast (killing the rest) if any rank fails."""
    ports: set[int] = set()
    while len(ports) < 2 * len(strategies):  # each strategy's 2-rank and 3-rank group's stores, all distinct
        ports.add(_free_port())
    ports = ",".join(map(str, ports))
    procs = []
    for rank in range(world):
        env = dict(os.environ, RANK=str(rank), LOCAL_RANK=str(rank), MASTER_ADDR="127.0.0.1", OMP_NUM_THREADS="1")
        log = open(work / f"rank{rank}.log", "w")  # noqa: SIM115  (closed below)
        cmd = [sys.executable, str(WORKER), "--work", str(work), "--ports", ports, "--strategies", ",".join(strategies)]
        procs.append((subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT), log))
    deadline = time.monotonic() + timeout_s
    try:
        while any(p.poll() is None for p, _ in procs):
            failed = [rank for rank, (p, _) in enumerate(procs) if p.poll() not in (None, 0)]
            assert not failed and time.monotonic() < deadline, (work / f"rank{(failed or [0])[0]}.log").read_text()[
                -4000:
            ]
            time.sleep(0.2)
    finally:
        for p, log in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
            log.close()
    assert all(p.returncode == 0 for p, _ in procs), (work / "rank0.log").read_text()[-4000:]


STRATEGIES = ["fsdp", "zero1"]


@pytest.fixture(scope="module")
def launched() -> Path:
    """One launch of 3 processes that runs every strategy's 2-rank run, conversion and 3-rank resume, made once
    per content of what it runs (tests/artifact_cache.py): the xdist worker whose test comes second waits for
    the other's launch instead of starting its own."""
    from artifact_cache import cached_artifact
    from trained_runs import run_dir_key

    key = run_dir_key(Path(__file__).resolve().parents[1] / "src", WORKER, Path(__file__), ",".join(STRATEGIES))
    return cached_artifact("ckpt-reshape-train-resume", key, lambda folder: _launch(folder, 3, STRATEGIES))


@pytest.mark.distributed
@pytest.mark.slow
@pytest.mark.parametrize("strategy", STRATEGIES)
def test_zaya_train_checkpoint_resumes_on_another_world_size(launched: Path, strategy: str):
    tmp_path = launched / strategy
    result = torch.load(tmp_path / "result.pt", weights_only=True)
    before, after = result["before"], result["after"]
    fsdp = strategy == "fsdp"
    assert f"layout dp=3,tp=1,pp=1,ep=1,fsdp={int(fsdp)}" in result["convert_output"]
    src, dst = tmp_path / "snapshot", tmp_path / "run3" / "checkpoints"

    # the reshaped root: a file per rank holding data (replicated DDP tensors are stored once, by rank 0), a
    # train state per new rank, zaya-train's manifest for 3 ranks
    step3 = dst / "step_00000003"
    data_ranks = range(3) if fsdp else range(1)
    assert sorted(p.name for p in step3.glob("__*_0.distcp")) == [f"__{r}_0.distcp" for r in data_ranks]
    states = [load_train_state(step3 / f"train-rank{r:05d}.pkl") for r in range(3)]
    source_states = [load_train_state(src / "step_00000003" / f"train-rank{r:05d}.pkl") for r in range(2)]
    assert [s["world_size"] for s in states] == [3, 3, 3]
    assert all(s["sampler"] == source_states[0]["sampler"] and s["progress"]["step"] == 3 for s in states)
    assert torch.equal(states[1]["rng"]["torch"], source_states[1]["rng"]["torch"])  # old ranks keep their own
    assert compare(src, step3).ok  # logically equal to the source, bit for bit
    # zaya-train's manifest (.metadata, shards, 3 train states, sidecar, trained_model.json) and checksums
    report = verify(step3)
    # .metadata, shards, train states, sidecar, and the trained model carried byte for byte
    assert report.ok and report.checked_files == 2 + len(data_ranks) + 3 + 1
    trained = "trained_model.json"
    assert (step3 / trained).read_bytes() == (src / "step_00000003" / trained).read_bytes()
    assert not any("zero1_optim" in state for state in source_states)

    # resumed at step 3 with the source's logical weights, bit for bit
    assert after["world_size"] == 3 and after["start_step"] == 3
    with open_checkpoint(src) as reader:
        model = {n[len("model.") :] for n in reader.index.tensors if n.startswith("model.")}
        assert set(after["start_weights"]) == model
        for name, tensor in after["start_weights"].items():
            assert torch.equal(tensor, reader.read_tensor("model." + name)), name
        if not fsdp:  # ZeRO-1: each parameter's state on exactly one of the 3 ranks, equal to the source's
            saved = {n for n in reader.index.tensors if n.startswith("optim.state.")}
            held = [f"optim.state.{fqn}.{k}" for state in after["start_optim"] for fqn, e in state.items() for k in e]
            assert len(after["start_optim"]) == 3 and all(after["start_optim"])
            assert sorted(held) == sorted(saved)
            for state in after["start_optim"]:
                for fqn, entry in state.items():
                    for key, tensor in entry.items():
                        assert torch.equal(tensor, reader.read_tensor(f"optim.state.{fqn}.{key}")), (fqn, key)

    # training continues: steps 4 and 5 run, with the losses of the 2-rank run (same batches, same moments)
    assert after["final_step"] == 5 and sorted(after["losses"]) == [4, 5]
    assert all(math.isfinite(loss) for loss in after["losses"].values())
    for step in (4, 5):
        assert after["losses"][step] == pytest.approx(before["losses"][step], rel=1e-4, abs=1e-5)
    assert (dst / "step_00000005" / "train-rank00002.pkl").is_file()  # and it checkpoints on 3 ranks
