"""Real 2-process gloo runs under torchrun: DDP, DDP + ZeRO-1 and FSDP2 match one process with the same
global batch (same data per step, same losses, same weights within fp32 tolerance), and each strategy's
sharded checkpoint loads back into a fresh trainer exactly. A 2-rank ZeRO-1 checkpoint resumes bitwise on
2 ranks and, by parameter name, on 1 and 3 ranks."""

import pickle
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch

WORKER = Path(__file__).with_name("train_dist_worker.py")


def _run(tmp_path: Path, name: str, nproc: int, *args: str, fails: bool = False) -> dict | str:
    """Run the worker on `nproc` ranks; its result (or, with `fails`, its stderr: it must fail)."""
    out = tmp_path / f"{name}.pt"
    if nproc == 1:
        cmd = [sys.executable, str(WORKER)]
    else:
        cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={nproc}", str(WORKER)]
    proc = subprocess.run(
        [*cmd, "--cache", str(tmp_path / "cache"), "--out", str(out), *args],
        capture_output=True,
        text=True,
        timeout=300,
    )
    if fails:
        assert proc.returncode != 0, proc.stderr[-4000:]
        return proc.stderr
    assert proc.returncode == 0, proc.stderr[-4000:]
    return torch.load(out, weights_only=False)


def _assert_match(ref: dict, got: dict) -> None:
    assert len(got["losses"]) == len(ref["losses"]) == 3
    assert got["losses"] == pytest.approx(ref["losses"], rel=1e-4, abs=1e-5)
    assert got["val"] == pytest.approx(ref["val"], rel=1e-4)
    assert got["resumed_step"] == 3 and got["resume_exact"]  # its own sharded checkpoint loads back exactly
    assert ref["weights"].keys() == got["weights"].keys()
    for key, value in ref["weights"].items():
        assert torch.allclose(got["weights"][key], value, atol=2e-4, rtol=1e-3), key


@pytest.fixture(scope="module")
def single(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("dist")
    return tmp, _run(tmp, "single", 1, "--strategy", "single")


@pytest.mark.distributed
@pytest.mark.slow
@pytest.mark.parametrize(
    "strategy",
    [["--strategy", "ddp"], ["--strategy", "ddp", "--zero1"], ["--strategy", "fsdp"]],
    ids=["ddp", "ddp-zero1", "fsdp"],
)
def test_two_process_run_matches_single_process(single, strategy):
    tmp, ref = single
    assert ref["losses"][-1] < ref["losses"][0]  # it trains
    got = _run(tmp, "-".join(strategy).strip("-"), 2, *strategy)
    _assert_match(ref, got)


# ZeRO-1 checkpoints: 6 sequences per step split over 1, 2 and 3 ranks; a checkpoint at step 3 of 5.
ZERO1 = ["--optimizer", "muon", "--steps", "5", "--global-batch", "6", "--micro-batch", "1", "--checkpoint-every", "3"]
ZERO1_RANKS = ["--strategy", "ddp", "--zero1", *ZERO1]


def _logical(step_dir: Path, tmp_path: Path) -> dict:
    """A DCP step folder as one nested state dict ({"model", "optim": {"state": {fqn: ...}, "param_groups"}})."""
    from torch.distributed.checkpoint.format_utils import dcp_to_torch_save

    out = tmp_path / f"{step_dir.parent.parent.name}-{step_dir.name}.pt"
    dcp_to_torch_save(step_dir, out)
    return torch.load(out, weights_only=False)


def _run_dir_from(snapshot: Path, run_dir: Path) -> Path:
    shutil.copytree(snapshot, run_dir / "checkpoints")
    return run_dir


@pytest.fixture(scope="module")
def zero1_reference(tmp_path_factory):
    """An uninterrupted 2-rank ZeRO-1 run of 5 steps, and a copy of its checkpoint root at step 3."""
    tmp = tmp_path_factory.mktemp("zero1")
    snap = tmp / "snapshot"
    ref = _run(tmp, "reference", 2, *ZERO1_RANKS, "--snapshot-at", "3", "--snapshot", str(snap))
    assert sorted(ref["step_losses"]) == [1, 2, 3, 4, 5]
    return tmp, ref, snap


@pytest.mark.distributed
@pytest.mark.slow
def test_zero1_checkpoint_holds_logical_optimizer_state(zero1_reference):
    tmp, _, snap = zero1_reference
    step3 = snap / "step_00000003"
    for rank in range(2):  # no optimizer shard in the pickled train state any more
        assert "zero1_optim" not in pickle.loads((step3 / f"train-rank{rank:05d}.pkl").read_bytes())
    saved = _logical(step3, tmp)
    # every parameter's state, once, under its name (the tied head under the embedding's), with the global
    # param groups: what DDP without ZeRO writes
    from zaya_model import ZayaConfig, ZayaForCausalLM

    names = {name for name, _ in ZayaForCausalLM(ZayaConfig.from_preset("zaya1-tiny")).named_parameters()}
    assert set(saved["optim"]["state"]) == names and "lm_head.weight" not in names
    groups = saved["optim"]["param_groups"]
    assert sorted(fqn for g in groups for fqn in g["params"]) == sorted(saved["optim"]["state"])
    assert {g["group_name"] for g in groups} == {"muon", "adamw", "adamw_no_decay"}
    muon = next(iter(g["params"] for g in groups if g["use_muon"]))[0]
    assert set(saved["optim"]["state"][muon]) == {"momentum_buffer"}


@pytest.mark.distributed
@pytest.mark.slow
def test_zero1_resume_on_same_world_is_bitwise(zero1_reference):
    tmp, ref, snap = zero1_reference
    run_dir = _run_dir_from(snap, tmp / "resume2")
    got = _run(tmp, "resume2", 2, *ZERO1_RANKS, "--run-dir", str(run_dir))
    assert got["start_step"] == 3 and got["step_losses"] == {s: ref["step_losses"][s] for s in (4, 5)}
    assert all(torch.equal(got["weights"][k], ref["weights"][k]) for k in ref["weights"])
    # the step-5 checkpoint equals the uninterrupted run's bit for bit
    want, have = (_logical(d / "checkpoints" / "step_00000005", tmp) for d in (tmp / "run-reference", run_dir))
    assert want["model"].keys() == have["model"].keys()
    assert all(torch.equal(want["model"][k], have["model"][k]) for k in want["model"])
    assert want["optim"]["param_groups"] == have["optim"]["param_groups"]
    assert want["optim"]["state"].keys() == have["optim"]["state"].keys()
    for fqn, entry in want["optim"]["state"].items():
        assert all(torch.equal(value, have["optim"]["state"][fqn][name]) for name, value in entry.items()), fqn
    assert "zero1_optim" not in pickle.loads((run_dir / "checkpoints/step_00000005/train-rank00001.pkl").read_bytes())


@pytest.mark.distributed
@pytest.mark.slow
@pytest.mark.parametrize("world", [1, 3])
def test_zero1_checkpoint_resumes_on_another_world_size(zero1_reference, world: int):
    tmp, ref, snap = zero1_reference
    run_dir = _run_dir_from(snap, tmp / f"resume{world}")
    # one process has no process group: it resumes into the unsharded optimizer (`strategy: single`)
    ranks = ["--strategy", "single", *ZERO1] if world == 1 else ZERO1_RANKS
    got = _run(tmp, f"resume{world}", world, *ranks, "--run-dir", str(run_dir))
    assert got["start_step"] == 3
    # the state each rank holds after the resume (its own parameters under this world's ZeRO partition)
    saved = _logical(snap / "step_00000003", tmp)["optim"]["state"]
    holders = {fqn: rank for rank, state in got["resumed_optim"].items() for fqn in state}
    assert sum(len(state) for state in got["resumed_optim"].values()) == len(holders) == len(saved)
    assert set(holders) == set(saved) and set(holders.values()) == set(range(world))
    for fqn, rank in holders.items():
        loaded = got["resumed_optim"][rank][fqn]
        assert loaded.keys() == saved[fqn].keys(), fqn
        assert all(torch.equal(loaded[name], saved[fqn][name]) for name in loaded), fqn
    # the same data and optimizer state: the uninterrupted 2-rank run's losses (sums in another order: ~1e-7)
    assert sorted(got["step_losses"]) == [4, 5]
    for step in (4, 5):
        assert got["step_losses"][step] == pytest.approx(ref["step_losses"][step], rel=1e-6, abs=0)


# Context parallelism (zigzag chunks over a CP group, distributed/mesh.py): sequences of 30 tokens, which do
# not divide into 2 x cp chunks (the end is padded and unlabelled), against one process on the same batches.
CP_SEQ = ["--seq-len", "30"]


@pytest.fixture(scope="module")
def single_cp(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("cp")
    return tmp, _run(tmp, "single", 1, "--strategy", "single", *CP_SEQ)


@pytest.mark.distributed
@pytest.mark.slow
@pytest.mark.parametrize(
    ("nproc", "args"),
    [
        (2, ["--strategy", "ddp", "--context-parallel", "2"]),
        (2, ["--strategy", "ddp", "--zero1", "--context-parallel", "2"]),
        (2, ["--strategy", "fsdp", "--context-parallel", "2"]),
        (2, ["--strategy", "ddp", "--context-parallel", "2", "--activation-checkpointing", "full"]),
        (4, ["--strategy", "ddp", "--context-parallel", "4"]),
        (4, ["--strategy", "fsdp", "--context-parallel", "2"]),  # dp 2 x cp 2
    ],
    ids=["cp2-ddp", "cp2-zero1", "cp2-fsdp", "cp2-ddp-recompute", "cp4-ddp", "dp2xcp2-fsdp"],
)
def test_context_parallel_run_matches_single_process(single_cp, nproc, args):
    tmp, ref = single_cp
    got = _run(tmp, f"{nproc}-" + "-".join(args).replace("--", ""), nproc, *args, *CP_SEQ)
    _assert_match(ref, got)


@pytest.mark.distributed
@pytest.mark.slow
def test_long_phase_switches_context_parallel_on_at_its_boundary(tmp_path):
    """2 ranks: phase p0 is data-parallel (dp 2), the long phase splits each sequence over both (cp 2)."""
    phases = ["--steps", "4", "--long-steps", "2", *CP_SEQ]
    ref = _run(tmp_path, "single", 1, "--strategy", "single", *phases)
    got = _run(tmp_path, "switch", 2, "--strategy", "ddp", "--long-cp", "2", *phases)
    assert got["phases"] == [("p0", 0, 1), ("long", 2, 2)] and ref["phases"] == [("p0", 0, 1), ("long", 2, 1)]
    assert got["losses"] == pytest.approx(ref["losses"], rel=1e-5, abs=1e-5)
    assert got["val"] == pytest.approx(ref["val"], rel=1e-5)
    for key, value in ref["weights"].items():
        assert torch.allclose(got["weights"][key], value, atol=2e-4, rtol=1e-3), key


# A checkpoint does not depend on cp: a 2-rank cp 2 run saved at step 3 of 5 resumes on cp 2 bit for bit, and
# on cp 1 (one process) and cp 4 (four processes) with the same steps 4 and 5 (sums in another order).
CP_RESUME = ["--optimizer", "muon", "--steps", "5", "--checkpoint-every", "3", *CP_SEQ]


@pytest.fixture(scope="module")
def cp2_reference(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("cp-resume")
    snap = tmp / "snapshot"
    args = ["--strategy", "ddp", "--context-parallel", "2", *CP_RESUME, "--snapshot-at", "3", "--snapshot", str(snap)]
    ref = _run(tmp, "reference", 2, *args)
    assert sorted(ref["step_losses"]) == [1, 2, 3, 4, 5]
    return tmp, ref, snap


@pytest.mark.distributed
@pytest.mark.slow
@pytest.mark.parametrize("cp", [2, 1, 4])
def test_context_parallel_checkpoint_resumes_on_another_cp_size(cp2_reference, cp):
    tmp, ref, snap = cp2_reference
    run_dir = _run_dir_from(snap, tmp / f"resume-cp{cp}")
    ranks = ["--strategy", "single"] if cp == 1 else ["--strategy", "ddp", "--context-parallel", str(cp)]
    got = _run(tmp, f"resume-cp{cp}", cp, *ranks, *CP_RESUME, "--run-dir", str(run_dir))
    assert got["start_step"] == 3 and sorted(got["step_losses"]) == [4, 5]
    if cp == 2:  # the same layout continues bit for bit
        assert got["step_losses"] == {s: ref["step_losses"][s] for s in (4, 5)}
        assert all(torch.equal(got["weights"][k], ref["weights"][k]) for k in ref["weights"])
        return
    for step in (4, 5):
        assert got["step_losses"][step] == pytest.approx(ref["step_losses"][step], rel=1e-5, abs=0)
    for key, value in ref["weights"].items():
        assert torch.allclose(got["weights"][key], value, atol=1e-5, rtol=1e-4), key


@pytest.mark.distributed
@pytest.mark.slow
def test_context_parallel_under_bf16_autocast_tracks_one_process(tmp_path):
    """bf16 autocast (the GPU setting): the halo, the gathered K/V and the chunked attention in bf16; the
    split changes bf16 rounding only (measured 2e-4 relative on these losses)."""
    bf16 = ["--precision", "bf16", *CP_SEQ]
    ref = _run(tmp_path, "single-bf16", 1, "--strategy", "single", *bf16)
    got = _run(tmp_path, "cp2-bf16", 2, "--strategy", "ddp", "--context-parallel", "2", *bf16)
    assert got["losses"] == pytest.approx(ref["losses"], rel=1e-3)
