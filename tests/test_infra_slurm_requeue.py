"""A lost node and a preemption on one supervised run (`python -m zaya_train.cluster.supervise`) on the local
Slurm cluster (`make slurm-up`), its final checkpoint byte-for-byte equal to an uninterrupted run's.

Job 1 runs on 2 of the 3 nodes (2 ranks, torchrun under srun). Once its step-2 checkpoint is committed, one
of them (not zaya-n1) is lost as a machine is: its slurmd and every process of the job on it are SIGKILLed and
the node is marked down; Slurm requeues the job. The supervisor sees the requeue left a node down, cancels it,
names the node lost, excludes it and resubmits: job 2 on the other two nodes resumes from step 2. Once it runs, it is preempted as Slurm's PreemptMode=REQUEUE
does (the local cluster has PreemptMode=OFF, so `scontrol requeue`: SIGTERM, SIGKILL after KillWait, back to
pending): the trainer saves on SIGTERM, Slurm runs the same job again after its hold (cred_expire), it resumes
from that save and finishes. An uninterrupted run of 2 ranks submitted beside it (on zaya-n1) ends with the
same bytes in every checkpoint shard."""

import contextlib
import json
import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from readme_blocks import checkout_workdir, readme_command
from slurm_cluster import CLUSTER, REPO, SLURM_CONF, TINY_PRETRAIN, cluster, run, slurm_long
from zaya_train.resilience.events import read_events

# infra/README.md's supervisor command as written (its run dir relative to a checkout-like folder), sizes appended
SUPERVISE = readme_command("infra/README.md", "python -m zaya_train.cluster.supervise ")
# 5 steps (2 of 16 x 128, 3 of 16 x 256), a checkpoint every 2: room to act after step 2 and again after the resume
SIZES = [*TINY_PRETRAIN, "recipe.phases.1.tokens=12288"]


def wait_for(what: str, check, timeout: float = 120.0, poll: float = 0.2):
    """check()'s first truthy answer, or a failure naming what did not happen."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if answer := check():
            return answer
        time.sleep(poll)
    pytest.fail(f"timed out after {timeout:.0f} s waiting for {what}")


def job_processes(job_id: str, node: str) -> list[int]:
    """The processes of a job on one node (by the environment slurmstepd gives its tasks) and their slurmstepd."""
    pids = set()
    for proc in Path("/proc").iterdir():
        try:
            env = (proc / "environ").read_bytes().split(b"\0")
        except OSError:
            continue
        if f"SLURM_JOB_ID={job_id}".encode() in env and f"SLURMD_NODENAME={node}".encode() in env:
            pids.add(int(proc.name))
            parent = int((proc / "stat").read_text().rsplit(")", 1)[1].split()[1])
            if (Path("/proc") / str(parent) / "comm").read_text().startswith("slurmstepd"):
                pids.add(parent)
    return sorted(pids)


def lose_node(job_id: str, node: str, env: dict[str, str]) -> None:
    """The machine is gone: its slurmd and the job's processes on it SIGKILLed at once, and the node marked down
    as a monitor would on finding it dead (else Slurm notices after SlurmdTimeout and its pings: ~30 s here)."""
    slurmd = int((SLURM_CONF.parents[1] / "run" / f"slurmd-{node}.pid").read_text())
    victims = [slurmd, *job_processes(job_id, node)]
    assert len(victims) > 2, f"no process of job {job_id} on {node}"
    for pid in victims:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    run(["scontrol", "update", f"nodename={node}", "state=down", "reason=machine gone (test)"], env)


def job_nodes(job_id: str, env: dict[str, str]) -> list[str]:
    out = run(["scontrol", "show", "job", "-o", job_id], env).stdout
    nodelist = next(f.split("=", 1)[1] for f in out.split() if f.startswith("NodeList="))
    return run(["scontrol", "show", "hostnames", nodelist], env).stdout.split()


def job_state(job_id: str, env: dict[str, str]) -> str:
    out = subprocess.run(["scontrol", "show", "job", "-o", job_id], env=env, capture_output=True, text=True).stdout
    return next((f.split("=", 1)[1] for f in out.split() if f.startswith("JobState=")), "")


def submitted(run_dir: Path) -> list[dict]:
    return [e for e in read_events(run_dir) if e["kind"] == "job_submitted"]


@pytest.mark.slow
@pytest.mark.distributed
@slurm_long(100, "three job starts and Slurm's requeue hold")
def test_lost_node_and_preemption_resume_bitwise_equal(tmp_path):
    with cluster() as env:
        work = checkout_workdir(tmp_path)
        run_dir = work / shlex.split(SUPERVISE)[shlex.split(SUPERVISE).index("--run-dir") + 1]
        ref_env = dict(env, RUN_DIR=str(tmp_path / "ref"), PYTHON=sys.executable, NPROC="2", ZAYA_REPO=str(REPO),
                       HEALTH_ARGS="--min-free-bytes 1000")  # fmt: skip
        # 2 ranks on zaya-n1 (the same ranks and collectives as on 2 nodes), away from the node the test loses
        reference = subprocess.Popen(["sbatch", "--parsable", "--wait", "--nodes=1", "--nodelist=zaya-n1",
                                      "--time=5", f"--output={tmp_path / 'ref.out'}", "infra/slurm/pretrain_job.sh",
                                      "train.device=cpu", *SIZES, f"paths.root_dir={tmp_path / 'ref-root'}"],
                                     env=ref_env, cwd=REPO, stdout=subprocess.PIPE, text=True)  # fmt: skip
        command = [sys.executable, *shlex.split(SUPERVISE)[1:], *SIZES, f"paths.root_dir={tmp_path / 'root'}"]
        supervisor = subprocess.Popen(command, env=env, cwd=work, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                      text=True)  # fmt: skip
        try:
            first = wait_for("job 1", lambda: submitted(run_dir))[0]
            latest = run_dir / "checkpoints" / "latest"
            wait_for("job 1's step-2 checkpoint", lambda: latest.is_file() and latest.read_text().strip() != "")
            lost = [n for n in job_nodes(first["job_id"], env) if n != "zaya-n1"][-1]
            lose_node(first["job_id"], lost, env)
            second = wait_for("job 2", lambda: submitted(run_dir)[1:])[0]
            wait_for("job 2's resume", lambda: [e for e in read_events(run_dir, "restart")
                                                 if e["time_unix"] >= second["time_unix"]])  # fmt: skip
            run(["scontrol", "requeue", second["job_id"]], env)
            out, _ = supervisor.communicate(timeout=300)
            reference.communicate(timeout=120)
        finally:
            for proc in (supervisor, reference):
                if proc.poll() is None:
                    proc.kill()
            for e in submitted(run_dir):  # a job the killed supervisor left behind
                subprocess.run(["scancel", e["job_id"]], env=env, capture_output=True)
            subprocess.run([str(CLUSTER), "up"], env=env, cwd=REPO, capture_output=True, timeout=120)  # its slurmd back
        assert supervisor.returncode == 0, out[-4000:]
        assert reference.returncode == 0, (tmp_path / "ref.out").read_text()[-3000:]
        events = read_events(run_dir)
        kinds = [e["kind"] for e in events if e["rank"] == -1]
        assert [(e["nodes"], e["exclude"]) for e in submitted(run_dir)] == [(2, []), (2, [lost])], kinds
        (excluded,) = [e for e in events if e["kind"] == "node_excluded"]
        assert (excluded["node"], excluded["drained"]) == (lost, False)
        assert excluded["reason"] in ("lost: down (machine gone (test))", "lost: down* (machine gone (test))")
        # Slurm requeued both jobs: job 1 after its node failed (cancelled by the supervisor), job 2 on preemption
        requeued = [(e["job_id"], e["lost"]) for e in events if e["kind"] == "job_requeued"]
        assert requeued == [(first["job_id"], [lost]), (second["job_id"], [])]
        assert [e["failure"] for e in events if e["kind"] == "job_failed"] == [
            f"lost {lost}: requeued by Slurm, cancelled to resubmit without it"
        ]
        (preempted,) = [e for e in events if e["kind"] == "preempted" and e["rank"] == 0]
        restarts = [e["step"] for e in events if e["kind"] == "restart" and e["rank"] == 0]
        assert restarts == [2, preempted["step"]] and preempted["saved"], restarts
        assert kinds[-1] == "run_completed" and job_state(second["job_id"], env) == "COMPLETED"
        final, ref = run_dir / "checkpoints" / "step_00000005", tmp_path / "ref" / "checkpoints" / "step_00000005"
        shards = sorted(p.name for p in ref.glob("*.distcp"))
        assert len(shards) == 2 and sorted(p.name for p in final.glob("*.distcp")) == shards
        for name in shards:
            assert (final / name).read_bytes() == (ref / name).read_bytes(), name
        assert json.loads((run_dir / "summary.json").read_text())["steps"] == 5
