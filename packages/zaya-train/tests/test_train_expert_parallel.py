"""Expert parallelism and HSDP on real gloo process groups under torchrun, every collective under strict devices
(NCCL's device rule, tests/strict_devices.py): EP 2 and 4 (DDP and FSDP2), EP x DP, EP x CP, HSDP and HSDP x EP
x CP give one process's losses and gradients within 1e-5 (fp32); the all-to-all bytes of a step are what
zaya_model.ep_traffic computes from the config and the routing; an EP 4 checkpoint is in ckpt-reshape's EP layout,
and reshaped by ckpt-reshape to EP 2 it resumes exactly. The config checks name the key in one line; the
throughput benchmark (benchmarks/ep_hsdp_throughput.py) runs on two CPU processes.

Three launches (one per world size: 1, 2 and 4 processes), each running its jobs in turn in the same ranks
(train_ep_worker.py), cached by content hash like test_train_distributed.py's (tests/artifact_cache.py)."""

import functools
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

WORKER = Path(__file__).with_name("train_ep_worker.py")
STRICT = Path(__file__).resolve().parents[3] / "tests" / "strict_devices.py"
CKPT_RESHAPE = Path(__file__).resolve().parents[2] / "ckpt-reshape" / "src"
TWO = " --steps 2"  # the equivalence runs: the first step's gradients, two steps' losses
# launch -> (world size, {run: worker arguments}); "{x}" is the path x in the launch's folder
LAUNCHES = {
    "one": (1, {"single": "--strategy single" + TWO}),  # run in the test's own process (no group)
    "two": (
        2,
        {
            "ep2-ddp": "--strategy ddp --expert-parallel 2 --count-a2a" + TWO,
            "ep2-fsdp": "--strategy fsdp --expert-parallel 2" + TWO,  # FSDP2 over one rank per expert
            # EP x CP on the same two ranks: each holds half the experts and half of every sequence
            "ep2-cp2-ddp": "--strategy ddp --expert-parallel 2 --context-parallel 2" + TWO,
        },
    ),
    "four": (
        4,
        {
            # 3 steps, a checkpoint at 2 kept as `ep4-snapshot`: reshaped to EP 2 and resumed below
            "ep4-ddp": "--strategy ddp --expert-parallel 4 --steps 3 --checkpoint-every 2 --snapshot-at 2 "
            "--snapshot {ep4-snapshot}",
            "ep2xdp2-fsdp": "--strategy fsdp --expert-parallel 2" + TWO,  # the experts sharded over edp 2
            "hsdp": "--strategy fsdp --replicate 2" + TWO,  # replicate 2 x shard 2
            "hsdp-ep2-cp2": "--strategy fsdp --replicate 2 --expert-parallel 2 --context-parallel 2" + TWO,
            "convert": "--convert {ep4-snapshot} {run-resume-ep2}/checkpoints dp=4,ep=2",
            "resume-ep2": "--strategy ddp --expert-parallel 2 --steps 3 --checkpoint-every 2 --run-dir {run-resume-ep2}",
        },
    ),
}
# the runs that must give one process's losses and gradients, by launch (one test each: a launch is paid once)
EQUIVALENT = {
    "two": ["ep2-ddp", "ep2-fsdp", "ep2-cp2-ddp"],
    "four": ["ep4-ddp", "ep2xdp2-fsdp", "hsdp", "hsdp-ep2-cp2"],
}


def _launch(folder: Path, nproc: int, jobs: dict[str, str]) -> None:
    def job(name: str, text: str) -> list[str]:
        args = [str(folder / a[1:].split("}")[0]) + a.split("}")[1] if a.startswith("{") else a for a in text.split()]
        if args[0] == "--convert":
            return args
        return [*args, "--cache", str(folder / "cache"), "--out", str(folder / f"{name}.pt")]

    spec = folder / "jobs.json"
    spec.write_text(json.dumps([job(name, args) for name, args in jobs.items()]))
    if "resume-ep2" in jobs:
        (folder / "run-resume-ep2").mkdir()  # the reshaped checkpoint root goes in before the job resumes it
    if nproc == 1:  # the reference needs no process group: train in this process (torch is imported already)
        import importlib.util

        loader = importlib.util.spec_from_file_location("train_ep_worker", WORKER)
        worker = importlib.util.module_from_spec(loader)
        loader.loader.exec_module(worker)
        worker.main(["--jobs", str(spec)], strict=False)
        return
    from warm_ranks import run_ranks  # torchrun's environment, ranks forked warm (tests/warm_ranks.py)

    proc = run_ranks(WORKER, ["--jobs", str(spec)], nproc, env={"OMP_NUM_THREADS": "1"})
    assert proc.returncode == 0, proc.stderr[-4000:]


@functools.cache
def _folder(launch: str) -> Path:
    """A launch's folder, built once and shared by the xdist workers and later sessions (tests/artifact_cache.py),
    keyed by the worker, strict devices, ckpt-reshape's sources and the launch."""
    import shutil

    from trained_runs import cached_run, run_dir_key

    nproc, jobs = LAUNCHES[launch]

    def build(folder: Path) -> None:
        _launch(folder, nproc, jobs)
        shutil.rmtree(folder / "cache")  # the tokenized data

    key = run_dir_key(WORKER, STRICT, CKPT_RESHAPE, json.dumps(LAUNCHES[launch]))
    return cached_run(f"zaya-train-ep-{launch}", key, build)


def _result(name: str) -> dict:
    (launch,) = (launch for launch, (_, jobs) in LAUNCHES.items() if name in jobs)
    return torch.load(_folder(launch) / f"{name}.pt", weights_only=True)


# Weights after the optimizer steps: Muon's Newton-Schulz and AdamW's normalised update turn the gradients'
# ~1e-6 differences (fp32 sums in another order) into larger ones; measured up to 2.5e-5 of the largest weight
# for the CP runs on an AMD EPYC (gradients 5.6e-7 there), under 1e-5 on the machine before.
WEIGHT_TOLERANCE = 1e-4


def _assert_close(got: torch.Tensor, want: torch.Tensor, what: str, tolerance: float = 1e-5) -> None:
    """Within `tolerance` of the tensor's largest magnitude (fp32 sums in another order)."""
    assert got.shape == want.shape, what
    assert (got - want).abs().max() <= tolerance * want.abs().max().clamp_min(1e-12), what


@pytest.mark.distributed
@pytest.mark.slow
@pytest.mark.parametrize("launch", EQUIVALENT)
def test_expert_parallel_and_hsdp_match_one_process(launch: str):
    ref = _result("single")
    assert ref["losses"][2] < ref["losses"][1]  # it trains
    for name in EQUIVALENT[launch]:
        got = _result(name)
        steps = sorted(ref["losses"])
        want = [ref["losses"][s] for s in steps]
        assert [got["losses"][s] for s in steps] == pytest.approx(want, rel=1e-5), name
        assert got["grads"].keys() == ref["grads"].keys(), name  # whole gradients: each expert by its global id
        for key, grad in ref["grads"].items():
            _assert_close(got["grads"][key], grad, f"{name}: {key}")
        if name == "ep4-ddp":  # it trains a third step (for the resume below)
            continue
        assert got["val"] == pytest.approx(ref["val"], rel=1e-5), name
        for key, weight in ref["weights"].items():
            _assert_close(got["weights"][key], weight, f"{name}: {key}", WEIGHT_TOLERANCE)


@pytest.mark.distributed
@pytest.mark.slow
def test_all_to_all_bytes_are_what_the_config_gives():
    """Bytes the all-to-alls carried (measured at the collective, summed over both ranks) against
    zaya_model.ep_traffic given the step's routing (from the routers' own counts on every rank)."""
    from zaya_model import ZayaConfig
    from zaya_model.ep_traffic import expert_parallel_traffic

    cfg = ZayaConfig.from_preset("zaya1-tiny")
    world, micro, tokens = 2, 2, 32  # each rank: two micro-batches of one 32-token sequence
    for step, (sent, remote, routed) in _result("ep2-ddp")["a2a"].items():
        runs = world * micro
        share = routed / (runs * cfg.num_hidden_layers * tokens * cfg.num_experts_per_tok)
        traffic = expert_parallel_traffic(cfg, tokens, 2, dtype_bytes=4, routed_share=share,
                                          remote_share=remote / routed)  # fmt: skip
        assert 0 < remote < routed
        assert sent == pytest.approx(runs * traffic.total, abs=runs), step
        assert traffic.counts == cfg.num_hidden_layers * cfg.num_experts * 8 // 2  # E int64s, half to the other rank


def _chunks(step_dir: Path) -> dict[str, list[tuple[int, ...]]]:
    """DCP's chunk offsets of every expert tensor of a step folder."""
    from zaya_config.train_checkpoint.dcp_metadata import read_dcp_metadata

    items = read_dcp_metadata(step_dir).state_dict_metadata.items()
    return {name: sorted(tuple(c.offsets) for c in item.chunks) for name, item in items if ".experts." in name}


@pytest.mark.distributed
@pytest.mark.slow
def test_expert_parallel_checkpoint_is_in_the_ep_layout_ckpt_reshape_reads():
    from ckpt_reshape import ParallelLayout, open_checkpoint

    snapshot = _folder("four") / "ep4-snapshot" / "step_00000002"
    with open_checkpoint(snapshot) as ckpt:
        assert ckpt.index.layout == ParallelLayout(dp=4, ep=4)  # from the manifest's layout
        shapes = {n: m.shape for n, m in ckpt.index.tensors.items() if n.startswith("model.") and ".experts." in n}
    assert shapes == {f"model.layers.{i}.moe.experts.{t}": s for i in range(2)
                      for t, s in (("gate_up", (4, 64, 64)), ("down", (4, 64, 32)))}  # fmt: skip
    # every EP rank's experts once, by global id (the replicas across ranks written once)
    for name, offsets in _chunks(snapshot).items():
        assert offsets == [(e, 0, 0) for e in range(4)], name
    reshaped = _folder("four") / "run-resume-ep2" / "checkpoints" / "step_00000002"
    with open_checkpoint(reshaped) as ckpt:
        assert ckpt.index.layout == ParallelLayout(dp=4, ep=2)
    for name, offsets in _chunks(reshaped).items():
        assert offsets == [(0, 0, 0), (2, 0, 0)], name


@pytest.mark.distributed
@pytest.mark.slow
def test_ep4_checkpoint_resumes_on_ep2_through_ckpt_reshape_exactly(tmp_path):
    from torch.distributed.checkpoint.format_utils import dcp_to_torch_save

    ref, got = _result("ep4-ddp"), _result("resume-ep2")
    assert got["start_step"] == 2 and sorted(got["losses"]) == [3]
    flat = tmp_path / "step2.pt"
    dcp_to_torch_save(_folder("four") / "ep4-snapshot" / "step_00000002", flat)
    model = torch.load(flat, weights_only=True)["model"]
    assert got["resumed_weights"].keys() == model.keys()
    assert all(torch.equal(got["resumed_weights"][k], model[k]) for k in model)  # loaded bit for bit
    assert got["losses"][3] == ref["losses"][3]  # the step after it: EP 4's own
    for key, want in ref["weights"].items():
        _assert_close(got["weights"][key], want, key)


@pytest.mark.distributed
@pytest.mark.slow
def test_expert_parallel_collectives_are_valid_under_nccl():
    """Strict devices ran every job; these EP collectives were among those it checked (on the training device)."""
    checked = json.loads((_folder("four") / "strict.json").read_text())
    for site in ("exchange_counts", "_AllToAll.forward", "_AllToAll.backward"):
        assert f"all_to_all_single zaya_model.expert_parallel.{site}" in checked
    assert "all_reduce zaya_train.distributed.expert_parallel.reduce_expert_gradients" in checked
    assert "all_reduce zaya_model.balancing.all_reduce_counts" in checked  # the router's load over EP x DP


def test_expert_parallel_config_errors_name_the_key():
    from zaya_config.errors import ZayaConfigError
    from zaya_model import ZayaConfig, ZayaForCausalLM
    from zaya_train.config import DistributedConfig
    from zaya_train.distributed.expert_parallel import check_model_expert_parallel
    from zaya_train.distributed.mesh import check_mesh
    from zaya_train.errors import ZayaTrainError

    def one_line(err: pytest.ExceptionInfo, *words: str) -> None:
        text = str(err.value)
        assert "\n" not in text and all(w in text for w in words), text

    with pytest.raises(ZayaTrainError) as err:
        check_mesh(4, 1, 3, 1)
    one_line(err, "train.distributed.expert_parallel = 3", "world size 4")
    with pytest.raises(ZayaTrainError) as err:
        check_mesh(8, 1, 4, 4)
    one_line(err, "train.distributed.expert_parallel = 4", "HSDP shard group (2")
    with pytest.raises(ZayaTrainError) as err:
        check_mesh(4, 1, 1, 3)
    one_line(err, "train.distributed.data_parallel_replicate = 3")
    with pytest.raises(ZayaTrainError) as err:
        check_model_expert_parallel(ZayaForCausalLM(ZayaConfig.from_preset("zaya1-tiny")), 8)
    one_line(err, "train.distributed.expert_parallel = 8", "model.num_experts = 4")
    from omegaconf import OmegaConf
    from zaya_config import validate_config

    with pytest.raises(ZayaConfigError) as err:  # a misspelt key (Hydra's own override check says the same)
        validate_config(OmegaConf.create({"train": {"distributed": {"expert_paralel": 2}}}))
    one_line(err, "unknown key train.distributed.expert_paralel", "expert_parallel")
    with pytest.raises(ZayaConfigError) as err:
        DistributedConfig(strategy="ddp", data_parallel_replicate=2).validate()
    one_line(err, "data_parallel_replicate = 2", "strategy is fsdp")
    with pytest.raises(ZayaConfigError) as err:
        DistributedConfig(strategy="ddp", zero1=True, expert_parallel=2).validate()
    one_line(err, "zero1 = True", "expert_parallel")


@pytest.mark.distributed
@pytest.mark.slow
def test_ep_hsdp_throughput_benchmark_smoke_on_two_cpu_processes(tmp_path):
    """benchmarks/ep_hsdp_throughput.py runs (one layout, one step, zaya1-tiny on gloo): what it reports exists."""
    packages = Path(__file__).resolve().parents[2]
    script = packages / "zaya-train" / "benchmarks" / "ep_hsdp_throughput.py"
    env = {
        **os.environ,
        "OMP_NUM_THREADS": "1",
        "PYTHONPATH": os.pathsep.join(map(str, sorted(packages.glob("*/src")))),
    }
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2", str(script), "--smoke",
           "--only", "fsdp + ep 2", "--out", str(tmp_path)]  # fmt: skip
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    (row,) = json.loads((tmp_path / "ep_hsdp.json").read_text())
    assert row["layout"] == "fsdp + ep 2" and row["world_size"] == 2 and row["tokens_per_s_per_gpu"] > 0
    assert 0 < row["all_to_all_share"] < 1 and row["all_to_all_bytes_per_gpu"] > 0
    assert row["all_to_all_bytes_per_gpu_balanced"] > 0
