"""The datatrove executors of a prepare: the tokenizing stage (one task per input shard) and the index
stage after it, on this machine (LocalPipelineExecutor: a process pool) or on Slurm (a job array, then a
dependent job). Datatrove's per-task completion markers under `OUT/.datatrove/` make a rerun resume.
"""

import os
import sys
from dataclasses import dataclass
from pathlib import Path

from datatrove.executor.base import PipelineExecutor

from zaya_train.data.dataset import LOGS
from zaya_train.errors import ZayaTrainError

EXECUTORS = ("local", "slurm")


@dataclass(frozen=True)
class SlurmOptions:
    """What sbatch needs for the job array (one CPU per task: datatrove's model)."""

    partition: str
    time: str = "04:00:00"
    cpus_per_task: int = 1
    mem_per_cpu_gb: int = 2
    job_name: str = "zaya-prepare"
    env_command: str | None = None  # shell line that activates the environment; default: this venv


def _venv_activate() -> str | None:
    activate = Path(sys.prefix) / "bin" / "activate"
    return str(activate) if activate.is_file() else None


def check_executor(kind: str, slurm: SlurmOptions | None) -> None:
    """Refuse an unknown executor or Slurm without a partition (before anything is read or written)."""
    if kind not in EXECUTORS:
        raise ZayaTrainError(f"--executor {kind!r} is not one of {', '.join(EXECUTORS)}")
    if kind == "slurm" and (slurm is None or not slurm.partition):
        raise ZayaTrainError("--executor slurm needs --partition (the Slurm partition to run the tasks on)")


def build_executors(
    kind: str,
    out: Path,
    tokenize: list,
    index: list,
    tasks: int,
    workers: int | None = None,
    slurm: SlurmOptions | None = None,
) -> tuple[PipelineExecutor, PipelineExecutor]:
    """(tokenizing stage, index stage); running the index stage runs the tokenizing stage first."""
    check_executor(kind, slurm)
    logs = Path(out) / LOGS
    if kind == "local":
        from zaya_train.data.prepare.quiet_executor import QuietLocalExecutor

        workers = (os.cpu_count() or 1) if workers is None else workers
        if workers < 1:
            raise ZayaTrainError(f"--workers {workers} must be at least 1")
        stage = QuietLocalExecutor(
            tokenize, tasks=tasks, workers=min(workers, tasks), logging_dir=str(logs / "tokenize")
        )
        last = QuietLocalExecutor(index, tasks=1, workers=1, logging_dir=str(logs / "index"), depends=stage)
        return stage, last
    if kind == "slurm":
        from datatrove.executor.slurm import SlurmPipelineExecutor

        common = {
            "time": slurm.time,
            "partition": slurm.partition,
            "cpus_per_task": slurm.cpus_per_task,
            "mem_per_cpu_gb": slurm.mem_per_cpu_gb,
            "env_command": slurm.env_command,
            "venv_path": None if slurm.env_command else _venv_activate(),
        }
        stage = SlurmPipelineExecutor(
            tokenize,
            tasks=tasks,
            workers=workers or -1,
            job_name=slurm.job_name,
            logging_dir=str(logs / "tokenize"),
            **common,
        )
        last = SlurmPipelineExecutor(
            index, tasks=1, job_name=f"{slurm.job_name}-index", logging_dir=str(logs / "index"), depends=stage, **common
        )
    return stage, last
