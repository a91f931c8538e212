"""Every collective of a training run is valid under NCCL's device rule, checked on CPU: 2 gloo ranks under
torchrun run train_dist_worker.py's DDP job with context parallelism 2, Muon, checkpoints, a resume and
evaluation, under strict devices (tests/strict_devices.py: a collective given a tensor its group would not
carry under NCCL, such as one made without a device on the default group, fails the run). The anomaly
verdict and the preemption flag were all-reduced as CPU tensors and failed it."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

WORKER = Path(__file__).with_name("train_strict_worker.py")
# the collectives a training step, an evaluation and a checkpoint make, by the function that calls them
EXPECTED = {
    "all_reduce zaya_train.resilience.runtime.Resilience.judge",  # the anomaly verdict
    "all_reduce zaya_train.resilience.preemption.PreemptionHandler.should_stop",  # the preemption flag
    "all_reduce zaya_train.distributed.setup.DistributedContext.all_reduce_sum",  # loss mean, eval sums
    "all_reduce zaya_model.balancing.all_reduce_counts",  # the router's expert load
    "all_gather zaya_model.context_parallel._GatherRanks.forward",  # CP: K/V
    "all_reduce zaya_model.context_parallel._GatherRanks.backward",
    "all_reduce zaya_model.context_parallel.group_mean_loss",
    "all_gather zaya_train.optim.muon.Muon._run",  # the rank-shared Newton-Schulz
}


@pytest.mark.distributed
@pytest.mark.slow
def test_every_collective_of_a_training_run_is_valid_under_nccl(tmp_path: Path):
    job = ["--strategy", "ddp", "--context-parallel", "2", "--seq-len", "30", "--steps", "1", "--checkpoint-every",
           "1", "--cache", str(tmp_path / "cache"), "--out", str(tmp_path / "run.pt")]  # fmt: skip
    (tmp_path / "jobs.json").write_text(json.dumps([job]))
    checked = tmp_path / "checked.json"
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2", str(WORKER),
           str(checked), "--jobs", str(tmp_path / "jobs.json")]  # fmt: skip
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert set(json.loads(checked.read_text())) >= EXPECTED
