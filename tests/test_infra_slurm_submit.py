"""Real submission through hydra-submitit-launcher to the local cluster (`make slurm-up`): a memstudy sweep
(two array tasks, both run dirs and the sweep summary once they end) and a tiny pretrain run under the
zaya_slurm_cpu preset on 2 nodes (one task per node, each a rank: world size 2, DDP over gloo), submitted at the
same time, with a 2-node run of torchrun under srun in an allocation (`salloc -N 2 ... srun_torchrun.sh`; all three
commands are infra/README.md's, as written, sizes appended)."""

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from readme_blocks import checkout_workdir, readme_command
from slurm_cluster import TINY_PRETRAIN, cluster

ZAYA = str(Path(sys.executable).with_name("zaya"))
README = "infra/README.md"


@pytest.mark.slow
@pytest.mark.distributed
def test_memstudy_sweep_and_pretrain_run_as_slurm_jobs(tmp_path):
    with cluster() as env:
        # infra/README.md's two commands as written (`zaya` from this venv), sizes and output folders appended
        memstudy = [ZAYA, *shlex.split(readme_command(README, "zaya run memstudy -m "))[1:], "memstudy.sample_bytes=65536",
                    "memstudy.plots=false", f"hydra.sweep.dir={tmp_path / 'ms'}"]  # fmt: skip
        pretrain = [ZAYA, *shlex.split(readme_command(README, "zaya run pretrain -m hydra/launcher=zaya_slurm_cpu"))[1:],
                    f"hydra.sweep.dir={tmp_path / 'pt'}", f"paths.root_dir={tmp_path}", *TINY_PRETRAIN]  # fmt: skip
        # and torchrun under srun in an allocation of 2 nodes, as written (in a folder like the checkout), sizes appended
        work = checkout_workdir(tmp_path)
        salloc = ["bash", "-c", " ".join([readme_command(README, "salloc -N 2 "), f"paths.root_dir={tmp_path}",
                                          *TINY_PRETRAIN])]  # fmt: skip
        venv = {**env, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"}  # as after activate
        procs = [subprocess.Popen(cmd, env=e, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
                 for cmd, e, cwd in ((memstudy, env, tmp_path), (pretrain, env, tmp_path), (salloc, venv, work))]  # fmt: skip
        outs = [p.communicate(timeout=300)[0] for p in procs]
        for proc, out in zip(procs, outs, strict=True):
            assert proc.returncode == 0, out[-4000:]
        # Each sweep job ran as a Slurm job (submitit's folder holds its sbatch script and Slurm's log).
        assert len(list((tmp_path / "ms" / ".submitit").glob("*/*_submission.sh"))) == 1
        assert "#SBATCH --array=0-1" in next((tmp_path / "ms" / ".submitit").glob("*/*_submission.sh")).read_text()
        runs = sorted(p.name for p in (tmp_path / "ms").iterdir() if p.is_dir() and not p.name.startswith("."))
        assert len(runs) == 2 and runs[0].startswith("0_hbm3") and runs[1].startswith("1_ddr4")
        for run in runs:
            assert json.loads((tmp_path / "ms" / run / "memstudy.json").read_text())
        summary = json.loads((tmp_path / "ms" / "memstudy_sweep.json").read_text())
        assert summary, "sweep summary written by the launching process after both jobs ended"
        run_dir = tmp_path / "pt" / "0"
        result = json.loads((run_dir / "summary.json").read_text())
        assert result["steps"] == 3 and result["final_val_loss"] < result["first_val_loss"]
        # Both nodes' tasks were the run's two ranks (by rank: the node each ran on), each its own submitit task.
        assert result["world_size"] == 2 and len(set(result["nodes"])) == 2, result
        assert len(list((run_dir / "checkpoints" / "step_00000003").glob("train-rank*.pkl"))) == 2
        logs = sorted((tmp_path / "pt" / ".submitit").glob("*/*_log.out"))
        assert len(logs) == 2 and all("Job completed successfully" in p.read_text() for p in logs)
        two = json.loads((work / "outputs" / "pretrain" / "two-nodes" / "summary.json").read_text())
        assert two["steps"] == 3 and two["world_size"] == 2 and len(set(two["nodes"])) == 2, two
        script = next((tmp_path / "pt" / ".submitit").glob("*/*_submission.sh")).read_text()
        assert "--gpus-per-node" not in script or "--gpus-per-node=0" in script
        assert "#SBATCH --cpus-per-task=1" in script and "export NCCL_NVLS_ENABLE=0" in script
