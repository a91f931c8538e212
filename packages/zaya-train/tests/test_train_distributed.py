"""Real 2-process gloo runs (torchrun's environment, tests/warm_ranks.py): DDP, DDP + ZeRO-1 and FSDP2 match one process with the same
global batch (same data per step, same losses, same weights within fp32 tolerance), and each strategy's
sharded checkpoint loads back into a fresh trainer exactly. A 2-rank ZeRO-1 checkpoint resumes bitwise on
2 ranks and, by parameter name, on 1 and 3 ranks; context parallelism matches one process and its checkpoints
resume on another cp size."""

import functools
import json
import re
import shutil
from collections import Counter
from pathlib import Path

import pytest
import torch
from zaya_config.train_checkpoint.train_state import load_train_state

WORKER = Path(__file__).with_name("train_dist_worker.py")

# The runs go in a few launches (LAUNCHES): each launch runs several runs in turn in the same ranks (the worker's
# --jobs), so the interpreter, torch import and gloo start-up are paid once per launch instead of once per run;
# every run is still a fresh trainer on a real gloo process group. A test reads the results of its runs.
# ZeRO-1 checkpoints: 6 sequences per step split over 1, 2 and 3 ranks; a checkpoint at step 3 of 5.
ZERO1 = ["--optimizer", "muon", "--steps", "5", "--global-batch", "6", "--micro-batch", "1", "--checkpoint-every", "3"]
ZERO1_RANKS = ["--strategy", "ddp", "--zero1", *ZERO1]
# Context parallelism (zigzag chunks over a CP group, distributed/mesh.py): sequences of 30 tokens, which do
# not divide into 2 x cp chunks (the end is padded and unlabelled), against one process on the same batches.
CP_SEQ = ["--seq-len", "30"]
CP_RUNS = {
    "cp2-ddp": ["--strategy", "ddp", "--context-parallel", "2", *CP_SEQ],
    "cp2-zero1": ["--strategy", "ddp", "--zero1", "--context-parallel", "2", *CP_SEQ],
    "cp2-fsdp": ["--strategy", "fsdp", "--context-parallel", "2", *CP_SEQ],
    "cp2-ddp-recompute": [
        "--strategy",
        "ddp",
        "--context-parallel",
        "2",
        "--activation-checkpointing",
        "full",
        *CP_SEQ,
    ],
}
CP4_RUNS = {
    "cp4-ddp": ["--strategy", "ddp", "--context-parallel", "4", *CP_SEQ],
    "dp2xcp2-fsdp": ["--strategy", "fsdp", "--context-parallel", "2", *CP_SEQ],  # dp 2 x cp 2
}
LONG_PHASES = ["--steps", "4", "--long-steps", "2", *CP_SEQ]
BF16 = ["--precision", "bf16", *CP_SEQ]
# A checkpoint does not depend on cp: a 2-rank cp 2 run saved at step 3 of 5 resumes on cp 2 bit for bit, and
# on cp 1 (one process) and cp 4 (four processes) with the same steps 4 and 5 (sums in another order).
CP_RESUME = ["--optimizer", "muon", "--steps", "5", "--checkpoint-every", "3", *CP_SEQ]
CP2_RANKS = ["--strategy", "ddp", "--context-parallel", "2"]


def snapshots_at_3(*folders: str) -> list[str]:
    """Worker arguments: copy the checkpoint root after step 3 to each folder of the launch's folder."""
    return ["--snapshot-at", "3", *(arg for folder in folders for arg in ("--snapshot", f"{{{folder}}}"))]


# launch -> (world size, {run: worker arguments}, {run dir: "launch/snapshot" copied into its checkpoints/});
# "{x}" in an argument is the path x in the launch's folder. A launch resuming from another's snapshot runs after
# it; a run resuming from a snapshot of its own launch gets it from the reference run (a second --snapshot).
LAUNCHES = {
    "baselines": (
        1,
        {
            "single": ["--strategy", "single"],
            "single-cp": ["--strategy", "single", *CP_SEQ],
            "single-long": ["--strategy", "single", *LONG_PHASES],
            "single-bf16": ["--strategy", "single", *BF16],
        },
        {},
    ),
    "two-rank": (
        2,
        {
            "ddp": ["--strategy", "ddp"],
            "ddp-zero1": ["--strategy", "ddp", "--zero1"],
            "fsdp": ["--strategy", "fsdp"],
            "switch": ["--strategy", "ddp", "--long-cp", "2", *LONG_PHASES],  # p0 dp 2, the long phase cp 2
            "cp2-bf16": [*CP2_RANKS, *BF16],
            **CP_RUNS,
        },
        {},
    ),
    "cp-four-rank": (4, CP4_RUNS, {}),
    "references": (  # uninterrupted 5-step runs, each with a copy of its checkpoint root at step 3, and the
        2,  # 2-rank resumes from that copy
        {
            "zero1-reference": [*ZERO1_RANKS, *snapshots_at_3("zero1-snapshot", "run-resume2/checkpoints")],
            "cp-reference": [*CP2_RANKS, *CP_RESUME, *snapshots_at_3("cp-snapshot", "run-resume-cp2/checkpoints")],
            "resume2": [*ZERO1_RANKS, "--run-dir", "{run-resume2}"],
            "resume-cp2": [*CP2_RANKS, *CP_RESUME, "--run-dir", "{run-resume-cp2}"],
        },
        {},
    ),
    # one process has no process group: it resumes into the unsharded optimizer (`strategy: single`)
    "resumes-one-rank": (
        1,
        {
            "resume1": ["--strategy", "single", *ZERO1, "--run-dir", "{run-resume1}"],
            "resume-cp1": ["--strategy", "single", *CP_RESUME, "--run-dir", "{run-resume-cp1}"],
        },
        {"run-resume1": "references/zero1-snapshot", "run-resume-cp1": "references/cp-snapshot"},
    ),
    "resumes-three-rank": (
        3,
        {"resume3": [*ZERO1_RANKS, "--run-dir", "{run-resume3}"]},
        {"run-resume3": "references/zero1-snapshot"},
    ),
    "resumes-four-rank": (
        4,
        {"resume-cp4": ["--strategy", "ddp", "--context-parallel", "4", *CP_RESUME, "--run-dir", "{run-resume-cp4}"]},
        {"run-resume-cp4": "references/cp-snapshot"},
    ),
}


def _launch(folder: Path, nproc: int, jobs: dict[str, list[str]], worker) -> None:
    """Run `jobs` (name -> worker arguments) in turn in one launch of `nproc` ranks (torchrun; one rank: in this
    process, `worker` being WORKER as a module); job `name` writes `folder/name.pt` and, unless given --run-dir,
    trains in `folder/run-name`."""
    spec = folder / "jobs.json"

    def job(name: str, args: list[str]) -> list[str]:
        args = [re.sub(r"\{([^}]+)\}", lambda m: str(folder / m[1]), a) for a in args]
        return [*args, "--cache", str(folder / "cache"), "--out", str(folder / f"{name}.pt")]

    specs = [job(name, args) for name, args in jobs.items()]
    if nproc == 1:  # no process group: the runs are trainers of this process, as make_trainer's are, on one
        threads = torch.get_num_threads()  # intra-op thread, as torchrun gives its ranks (a second would spin)
        torch.set_num_threads(1)
        try:
            for args in specs:
                worker.run_job(worker._parser().parse_args(args))
        finally:
            torch.set_num_threads(threads)
        return
    spec.write_text(json.dumps(specs))
    from warm_ranks import run_ranks  # torchrun's environment, ranks forked warm (tests/warm_ranks.py)

    proc = run_ranks(WORKER, ["--jobs", str(spec)], nproc, env={"OMP_NUM_THREADS": "1"})
    assert proc.returncode == 0, proc.stderr[-4000:]


@functools.cache
def _launch_folder(launch: str, worker) -> Path:
    """The folder of a launch's runs, built once and shared by the xdist workers and later sessions
    (tests/artifact_cache.py), keyed by the worker's source, the launch and the launches it copies from."""
    from trained_runs import cached_run, run_dir_key

    nproc, jobs, copies = LAUNCHES[launch]
    sources = {src: _launch_folder(src.split("/")[0], worker) / src.split("/")[1] for src in copies.values()}

    def build(folder: Path) -> None:
        for run_dir, src in copies.items():
            shutil.copytree(sources[src], folder / run_dir / "checkpoints")
        _launch(folder, nproc, jobs, worker)
        shutil.rmtree(folder / "cache")  # the tokenized data: any launch that needs it tokenizes it again

    key = run_dir_key(WORKER, json.dumps(LAUNCHES[launch]), *sorted(str(p.parent.name) for p in sources.values()))
    return cached_run(f"zaya-train-dist-{launch}", key, build)


class Runs:
    """The runs of LAUNCHES by name; a run's launch starts the first time a test asks for one of its runs."""

    def __init__(self, worker) -> None:
        self.worker = worker  # WORKER as a module of this process (its one-process launches run here)

    def folder(self, launch: str) -> Path:
        return _launch_folder(launch, self.worker)

    def result(self, name: str) -> dict:
        (launch,) = (launch for launch, (_, jobs, _) in LAUNCHES.items() if name in jobs)
        return torch.load(self.folder(launch) / f"{name}.pt", weights_only=True)


@pytest.fixture(scope="session")
def runs(load_worker) -> Runs:
    """Every distributed run and its one-process reference, shared by the tests that compare them."""
    return Runs(load_worker(WORKER))


def _assert_match(ref: dict, got: dict) -> None:
    assert len(got["losses"]) == len(ref["losses"]) == 3
    assert got["losses"] == pytest.approx(ref["losses"], rel=1e-4, abs=1e-5)
    assert got["val"] == pytest.approx(ref["val"], rel=1e-4)
    assert got["resumed_step"] == 3 and got["resume_exact"]  # its own sharded checkpoint loads back exactly
    assert ref["weights"].keys() == got["weights"].keys()
    for key, value in ref["weights"].items():
        assert torch.allclose(got["weights"][key], value, atol=2e-4, rtol=1e-3), key


@pytest.mark.distributed
@pytest.mark.slow
@pytest.mark.parametrize("name", ["ddp", "ddp-zero1", "fsdp"])
def test_two_process_run_matches_single_process(runs, name):
    ref = runs.result("single")
    assert ref["losses"][-1] < ref["losses"][0]  # it trains
    _assert_match(ref, runs.result(name))


def _logical(step_dir: Path, tmp_path: Path) -> dict:
    """A DCP step folder as one nested state dict ({"model", "optim": {"state": {fqn: ...}, "param_groups"}})."""
    from torch.distributed.checkpoint.format_utils import dcp_to_torch_save

    out = tmp_path / f"{step_dir.parent.parent.name}-{step_dir.name}.pt"
    dcp_to_torch_save(step_dir, out)
    return torch.load(out, weights_only=True)


@pytest.fixture(scope="session")
def zero1_reference(runs):
    """An uninterrupted 2-rank ZeRO-1 run of 5 steps (6 sequences per step), and its checkpoint root at step 3."""
    ref = runs.result("zero1-reference")
    assert sorted(ref["step_losses"]) == [1, 2, 3, 4, 5]
    return ref, runs.folder("references") / "zero1-snapshot"


@pytest.mark.distributed
@pytest.mark.slow
def test_zero1_checkpoint_holds_logical_optimizer_state(zero1_reference, tmp_path):
    _, snap = zero1_reference
    step3 = snap / "step_00000003"
    for rank in range(2):  # no optimizer shard in the pickled train state any more
        assert "zero1_optim" not in load_train_state(step3 / f"train-rank{rank:05d}.pkl")
    saved = _logical(step3, tmp_path)
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
def test_zero1_resume_on_same_world_is_bitwise(runs, zero1_reference, tmp_path):
    ref, _ = zero1_reference
    run_dir = runs.folder("references") / "run-resume2"
    got = runs.result("resume2")
    assert got["start_step"] == 3 and got["step_losses"] == {s: ref["step_losses"][s] for s in (4, 5)}
    assert all(torch.equal(got["weights"][k], ref["weights"][k]) for k in ref["weights"])
    # the step-5 checkpoint equals the uninterrupted run's bit for bit
    want, have = (
        _logical(d / "checkpoints" / "step_00000005", tmp_path)
        for d in (runs.folder("references") / "run-zero1-reference", run_dir)
    )
    assert want["model"].keys() == have["model"].keys()
    assert all(torch.equal(want["model"][k], have["model"][k]) for k in want["model"])
    assert want["optim"]["param_groups"] == have["optim"]["param_groups"]
    assert want["optim"]["state"].keys() == have["optim"]["state"].keys()
    for fqn, entry in want["optim"]["state"].items():
        assert all(torch.equal(value, have["optim"]["state"][fqn][name]) for name, value in entry.items()), fqn
    assert "zero1_optim" not in load_train_state(run_dir / "checkpoints/step_00000005/train-rank00001.pkl")


@pytest.mark.distributed
@pytest.mark.slow
@pytest.mark.parametrize("world", [1, 3])
def test_zero1_checkpoint_resumes_on_another_world_size(runs, zero1_reference, tmp_path, world: int):
    ref, snap = zero1_reference
    got = runs.result(f"resume{world}")
    assert got["start_step"] == 3
    # the state each rank holds after the resume (its own parameters under this world's ZeRO partition)
    saved = _logical(snap / "step_00000003", tmp_path)["optim"]["state"]
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
    # counted: the samples (source, window) the resumed ranks read together are the uninterrupted run's, each
    # as often, so across the change of data-parallel size none is repeated or skipped
    assert sorted(got["picks"]) == [4, 5] and sorted(ref["picks"]) == [1, 2, 3, 4, 5]
    assert {source for step in ref["picks"].values() for source, _ in step} == {"email", "json"}  # a mixture
    for step in (4, 5):
        assert len(got["picks"][step]) == 6 and Counter(got["picks"][step]) == Counter(ref["picks"][step]), step
    read = Counter(p for step in (1, 2, 3) for p in ref["picks"][step]) + Counter(
        p for step in (4, 5) for p in got["picks"][step]
    )
    assert read == Counter(p for step in ref["picks"].values() for p in step)


@pytest.mark.distributed
@pytest.mark.slow
@pytest.mark.parametrize("name", [*CP_RUNS, *CP4_RUNS])
def test_context_parallel_run_matches_single_process(runs, name):
    _assert_match(runs.result("single-cp"), runs.result(name))


@pytest.mark.distributed
@pytest.mark.slow
def test_long_phase_switches_context_parallel_on_at_its_boundary(runs):
    """2 ranks: phase p0 is data-parallel (dp 2), the long phase splits each sequence over both (cp 2)."""
    ref, got = runs.result("single-long"), runs.result("switch")
    assert got["phases"] == [("p0", 0, 1), ("long", 2, 2)] and ref["phases"] == [("p0", 0, 1), ("long", 2, 1)]
    assert got["losses"] == pytest.approx(ref["losses"], rel=1e-5, abs=1e-5)
    assert got["val"] == pytest.approx(ref["val"], rel=1e-5)
    for key, value in ref["weights"].items():
        assert torch.allclose(got["weights"][key], value, atol=2e-4, rtol=1e-3), key


@pytest.fixture(scope="session")
def cp2_reference(runs):
    """An uninterrupted 2-rank cp 2 run of 5 steps with a checkpoint at step 3."""
    ref = runs.result("cp-reference")
    assert sorted(ref["step_losses"]) == [1, 2, 3, 4, 5]
    return ref


@pytest.mark.distributed
@pytest.mark.slow
@pytest.mark.parametrize("cp", [2, 1, 4])
def test_context_parallel_checkpoint_resumes_on_another_cp_size(runs, cp2_reference, cp):
    ref, got = cp2_reference, runs.result(f"resume-cp{cp}")
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
def test_context_parallel_under_bf16_autocast_tracks_one_process(runs):
    """bf16 autocast (the GPU setting): the halo, the gathered K/V and the chunked attention in bf16; the
    split changes bf16 rounding only (measured 2e-4 relative on these losses)."""
    ref, got = runs.result("single-bf16"), runs.result("cp2-bf16")
    assert got["losses"] == pytest.approx(ref["losses"], rel=1e-3)
