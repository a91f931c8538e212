"""An srun step of several tasks without torchrun (hydra-submitit-launcher's `hydra.launcher.nodes=2`) is one run:
each task's rank, world size and local rank come from Slurm's environment; torchrun's own variables win; a
missing rendezvous address is one line naming the fix. (On the real cluster: tests/test_infra_slurm_submit.py.)"""

import os

import pytest
from zaya_train.distributed.setup import ranks_from_slurm
from zaya_train.errors import ZayaTrainError

SLURM = {"SLURM_STEP_NUM_TASKS": "2", "SLURM_PROCID": "1", "SLURM_LOCALID": "0"}


@pytest.fixture
def env(monkeypatch):
    for var in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT", *SLURM):
        monkeypatch.delenv(var, raising=False)
    return monkeypatch


def test_each_task_of_an_srun_step_is_a_rank(env):
    for var, value in {**SLURM, "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "29512"}.items():
        env.setenv(var, value)
    ranks_from_slurm()
    assert (os.environ["RANK"], os.environ["WORLD_SIZE"], os.environ["LOCAL_RANK"]) == ("1", "2", "0")


def test_torchrun_and_single_tasks_are_left_alone_and_no_address_is_refused(env):
    env.setenv("SLURM_STEP_NUM_TASKS", "1")
    env.setenv("SLURM_PROCID", "0")
    ranks_from_slurm()
    assert "WORLD_SIZE" not in os.environ  # one task: a run alone
    for var, value in SLURM.items():
        env.setenv(var, value)
    env.setenv("WORLD_SIZE", "4")  # torchrun under srun (infra/slurm/srun_torchrun.sh): torchrun's ranks
    ranks_from_slurm()
    assert os.environ["WORLD_SIZE"] == "4" and "RANK" not in os.environ
    env.delenv("WORLD_SIZE")
    with pytest.raises(ZayaTrainError) as err:
        ranks_from_slurm()
    assert str(err.value).startswith(
        "an srun step of 2 tasks is one run of 2 ranks, but MASTER_ADDR, MASTER_PORT is not"
    )
