"""The Slurm commands the supervisor uses (sbatch, scontrol, sinfo, srun), each one subprocess call.

Job states come from `scontrol show job` (kept for MinJobAge after the end), not `sacct`: a cluster without
accounting storage (the local one of infra/slurm) has no sacct.
"""

import shlex
import subprocess
from dataclasses import dataclass

from zaya_train.errors import ZayaTrainError

USABLE_STATES = ("idle", "mixed", "allocated", "completing")
ACTIVE_STATES = ("PENDING", "CONFIGURING", "RUNNING", "COMPLETING", "REQUEUED", "RESIZING", "SUSPENDED")


class SlurmError(ZayaTrainError):
    """A Slurm command failed; the message has the command and its stderr."""


def run(cmd: list[str], timeout: float = 60.0) -> str:
    """stdout of a Slurm command, or SlurmError with what it said."""
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except FileNotFoundError as err:
        raise SlurmError(f"{cmd[0]} not found: is Slurm installed (make slurm-up) and on PATH?") from err
    if proc.returncode != 0:
        raise SlurmError(f"{shlex.join(cmd)} failed ({proc.returncode}): {proc.stderr.strip() or proc.stdout.strip()}")
    return proc.stdout


@dataclass
class JobInfo:
    """What the supervisor needs of a job: its state, exit code, signal, nodes and requeue count."""

    job_id: str
    state: str
    exit_code: int
    signal: int
    nodes: list[str]
    restarts: int
    reason: str

    @property
    def active(self) -> bool:
        """Not ended yet (pending, running, requeued after a preemption ...)."""
        return self.state in ACTIVE_STATES


def hostnames(nodelist: str) -> list[str]:
    """zaya-n[1-2] -> [zaya-n1, zaya-n2] (Slurm's own expansion)."""
    if not nodelist or nodelist == "(null)":
        return []
    return run(["scontrol", "show", "hostnames", nodelist]).split()


def job_info(job_id: str) -> JobInfo:
    """The job's record from `scontrol show job -o`."""
    fields = dict(item.split("=", 1) for item in run(["scontrol", "show", "job", "-o", job_id]).split() if "=" in item)
    code, _, sig = fields.get("ExitCode", "0:0").partition(":")
    return JobInfo(job_id, fields.get("JobState", "UNKNOWN"), int(code), int(sig or 0),
                   hostnames(fields.get("NodeList", "")), int(fields.get("Restarts", "0")),
                   fields.get("Reason", ""))  # fmt: skip


def node_states(partition: str | None) -> dict[str, tuple[str, str]]:
    """Each node's state as sinfo prints it (`idle`, `mixed*`, `down*`: `*` = not responding) and Slurm's reason."""
    cmd = ["sinfo", "-h", "-N", "-o", "%N|%T|%E"] + (["-p", partition] if partition else [])
    states = {}
    for line in run(cmd).splitlines():
        name, state, reason = line.split("|", 2)
        states.setdefault(name, (state, reason))
    return states


def usable(state: str) -> bool:
    """A node that can take a job now: answering, and not down, drained or draining."""
    return not state.endswith("*") and state.rstrip("~#!%$@^-+") in USABLE_STATES


def usable_nodes(partition: str | None) -> list[str]:
    """Nodes that can take a job now (answering; not down, drained or draining)."""
    return [name for name, (state, _) in node_states(partition).items() if usable(state)]


def drain(node: str, reason: str) -> None:
    """Take a node out of scheduling with the reason (an admin's right: SlurmUser or root)."""
    run(["scontrol", "update", f"nodename={node}", "state=drain", f"reason={reason[:200]}"])


def sbatch(args: list[str]) -> str:
    """Submit; returns the job id."""
    return run(["sbatch", "--parsable", *args]).strip().split(";")[0]


def cancel(job_id: str) -> None:
    """Cancel a job (the supervisor interrupted)."""
    run(["scancel", job_id])
