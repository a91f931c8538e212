"""Dry runs of the torchrun recipes: the command line each node would run (single_node.sh also runs for real in
services/pretrain/tests/test_service_pretrain_torchrun.py)."""

import os
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def recipe(name: str, *args: str, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["bash", str(REPO / "infra" / "torchrun" / name), *args],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "DRY_RUN": "1", "PYTHON": "python3", **env},
    )


def test_multi_node_uses_a_c10d_rendezvous_shared_by_every_node():
    env = {"MASTER_ADDR": "node0", "NNODES": "4", "NPROC": "8", "RUN_ID": "zaya1-base-01", "RUN_DIR": "/shared/r1"}
    result = recipe("multi_node.sh", "model=zaya1-base", "hardware=h200", **env)
    assert result.returncode == 0, result.stderr
    command = result.stdout.split()
    assert command[:3] == ["python3", "-m", "torch.distributed.run"]
    for flag in (
        "--nnodes=4",
        "--nproc_per_node=8",
        "--rdzv_backend=c10d",
        "--rdzv_endpoint=node0:29500",
        "--rdzv_id=zaya1-base-01",
        "--max-restarts=3",
    ):
        assert flag in command, flag
    assert command[-4:] == [
        "services/pretrain/main.py",
        "hydra.run.dir=/shared/r1",
        "model=zaya1-base",
        "hardware=h200",
    ]


def test_multi_node_refuses_to_start_without_the_rendezvous_settings():
    result = recipe("multi_node.sh", NNODES="2", RUN_ID="x", RUN_DIR="/tmp/x", MASTER_ADDR="")
    assert result.returncode != 0
    assert "set MASTER_ADDR to the host of the rendezvous" in result.stderr


def test_single_node_is_standalone_with_one_shared_run_dir():
    result = recipe("single_node.sh", "train.device=cpu", NPROC="2", RUN_DIR="outputs/pretrain/t", MAX_RESTARTS="2")
    assert result.returncode == 0, result.stderr
    command = result.stdout.split()
    assert "--standalone" in command and "--nproc_per_node=2" in command and "--max-restarts=2" in command
    assert command[-2:] == ["hydra.run.dir=outputs/pretrain/t", "train.device=cpu"]
