"""Dry run of the Slurm recipe: the sbatch script a service sweep would submit, rendered by submitit."""

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
RENDER = REPO / "infra" / "slurm" / "render_sbatch.py"


@pytest.fixture
def services(tmp_path: Path) -> Path:
    """A services folder holding one minimal service composed from the shared groups."""
    conf = tmp_path / "services" / "demo" / "conf"
    conf.mkdir(parents=True)
    (conf / "demo.yaml").write_text("defaults:\n  - hardware: cpu\n  - _self_\nlr: 0.1\n")
    (conf.parent / "main.py").write_text("")
    return tmp_path / "services"


def render(services: Path, *overrides: str) -> str:
    code = (
        "import sys, pathlib; sys.path.insert(0, sys.argv[1]); import render_sbatch as r; "
        "print(r.render('demo', sys.argv[3:], pathlib.Path(sys.argv[2])))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code, str(RENDER.parent), str(services), *overrides], capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout


def test_sweep_becomes_a_job_array_with_the_gpu_layout_and_env(services):
    text = render(services, "lr=0.1,0.2", "hardware=cpu,h200", "hydra.launcher.nodes=2")
    assert "# zaya: 4 job(s) of service 'demo'" in text
    assert "#   job 3: lr=0.2 hardware=h200 hydra.launcher.nodes=2" in text
    for line in (
        "#SBATCH --array=0-3%4",
        "#SBATCH --nodes=2",
        "#SBATCH --gpus-per-node=8",
        "#SBATCH --ntasks-per-node=1",
        "#SBATCH --time=1440",
        "#SBATCH --job-name=demo",
        "#SBATCH --signal=USR2@180",
        "export NCCL_NVLS_ENABLE=0",
        "export TORCH_NCCL_ASYNC_ERROR_HANDLING=3",
    ):
        assert line in text, line
    assert "srun --unbuffered" in text and "submitit.core._submit" in text


def test_single_job_has_no_array_and_overrides_reach_sbatch(services, monkeypatch):
    monkeypatch.setenv("ZAYA_SLURM_PARTITION", "h200")
    text = render(services, "hydra.launcher.gpus_per_node=4", "hydra.launcher.timeout_min=30")
    assert "--array" not in text
    assert "#SBATCH --partition=h200" in text
    assert "#SBATCH --gpus-per-node=4" in text and "#SBATCH --time=30" in text
