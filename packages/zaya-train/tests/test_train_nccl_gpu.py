"""One GPU under NCCL (marker `gpu`, skipped without CUDA): a short Trainer run with resilience on, in a real
NCCL process group of world size 1, which rejects a CPU tensor as every NCCL group does ("No backend type
associated with device type cpu"). The run makes every kind of collective a multi-GPU step makes: the
anomaly verdict's and the preemption flag's all-reduces (Resilience), DDP's or FSDP2's gradients, the loss
mean and the router's load counts, Muon's shared Newton-Schulz, the checkpoint's gloo group and the object
broadcasts (crash-loop check, checkpoint choice). A NaN batch at step 2 is skipped, SIGTERM at step 4 saves
and stops, and a fresh trainer resumes from that save to step 5 (eager: compilation changes no collective).
Needs torch and our sources only, plus
omegaconf and zarr (the lent GPU machine: wheels carried, zaya-train's BENCHMARKS.md says how)."""

import math
from pathlib import Path

import pytest
import torch


@pytest.fixture
def nccl_group():
    """A real NCCL process group of one rank on cuda:0 (build_trainer joins it as it is)."""
    import torch.distributed as dist

    dist.init_process_group("nccl", store=dist.HashStore(), rank=0, world_size=1, device_id=torch.device("cuda", 0))
    yield
    dist.destroy_process_group()


@pytest.mark.gpu
@pytest.mark.parametrize("strategy", ["ddp", "fsdp"])
def test_training_with_resilience_runs_under_nccl(nccl_group, make_trainer, tmp_path: Path, strategy: str):
    import torch.distributed as dist
    from zaya_train.config import CheckpointConfig, DistributedConfig
    from zaya_train.resilience.config import FaultsConfig, FaultSpec
    from zaya_train.resilience.events import read_events

    faults = FaultsConfig(injections=[FaultSpec(kind="nan", at_step=2), FaultSpec(kind="sigterm", at_step=4)])
    run_dir = tmp_path / strategy

    def trainer():
        return make_trainer(run_dir=run_dir, device="cuda", compile=False, max_steps=5, faults=faults,
                            distributed=DistributedConfig(strategy=strategy),
                            checkpoint=CheckpointConfig(enabled=True, every_steps=2))  # fmt: skip

    first = trainer()
    assert dist.get_backend() == "nccl" and first.ctx.device.type == "cuda" and first.ctx.strategy == strategy
    with pytest.raises(SystemExit) as stopped:  # SIGTERM at step 4: every rank agrees, saves, exits cleanly
        first.run()
    first.close()
    assert stopped.value.code == 0
    assert [e["step"] for e in read_events(run_dir, "anomaly_skip")] == [2]
    (preempted,) = read_events(run_dir, "preempted")
    assert preempted["saved"] and preempted["step"] == 4
    second = trainer()
    summary = second.run()  # resumes from the preemption's save (checkpoint choice and crash-loop check broadcast)
    second.close()
    assert second.progress.step == 5 and math.isfinite(summary["final_val_loss"]) and read_events(run_dir, "completed")
