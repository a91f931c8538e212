"""Cluster-level fault tolerance against the local Slurm cluster (`make slurm-up`), through the supervisor
(`python -m zaya_train.cluster.supervise`), plus the parts that need no cluster (the straggler rule, bad options;
the nvidia-smi check: packages/zaya-train/tests/test_train_cluster_nvidia.py).

The cluster run, one supervisor for all of it: job 1 on zaya-n1 + zaya-n2, where zaya-n1's checkpoint-room
check fails (a real free-space comparison, given a test reserve) -> drained with the reason, resubmitted
without it; job 2 on zaya-n2 + zaya-n3 (torchrun under srun, 2 nodes, gloo), rank 1 sleeps in every forward ->
named a straggler in events.jsonl, saves and stops -> zaya-n3 drained; job 3 on zaya-n2 alone (1 node)
resumes from job 2's checkpoint, and its training process is SIGKILLed at step 3 -> zaya-n2 passes the health
check after the failure, job 4 resumes from step 2 again and finishes."""

import json
import subprocess
import sys

import pytest
from slurm_cluster import REPO, TINY_PRETRAIN, cluster, resume_nodes, slurm_long
from zaya_config.errors import ZayaConfigError
from zaya_train.cluster.config import StragglerConfig
from zaya_train.cluster.straggler import stragglers
from zaya_train.cluster.supervise import main as supervise_main
from zaya_train.resilience.events import read_events

SUPERVISE = [sys.executable, "-m", "zaya_train.cluster.supervise"]
FAST = ["--nproc", "1", "--backoff-s", "0.2", "--poll-s", "0.3", "--time-min", "5"]


def test_straggler_rule_and_its_keys_are_validated():
    assert stragglers([1.0, 1.1, 3.0, 0.9], k=1.5) == [2]
    assert stragglers([1.0, 1.0], k=1.5) == []
    for bad, key in (({"k": 1.0}, "k"), ({"m": 0}, "m"), ({"action": "drain"}, "action"),
                     ({"test_sleep_s": 0.1}, "test_sleep_rank")):  # fmt: skip
        with pytest.raises(ZayaConfigError, match=f"^invalid config: {key} = "):
            StragglerConfig(**bad).validate()


def test_supervisor_bad_option_is_one_line(capsys):
    assert supervise_main(["--nodes", "2", "--min-nodes", "3"]) == 2
    assert capsys.readouterr().err == "supervisor: invalid config: min_nodes = 3; allowed: an integer <= nodes (2)\n"


@pytest.mark.slow
def test_retry_budget_spent_is_one_line(tmp_path):
    with cluster() as env:
        reserve = [arg for n in (1, 2, 3) for arg in ("--test-reserve", f"zaya-n{n}=10000000000000000")]
        proc = subprocess.run([*SUPERVISE, "--run-dir", str(tmp_path / "run"), "--nodes", "1", "--max-retries", "0",
                               "--no-drain", *FAST, "--health-args", " ".join(["--min-free-bytes", "1000", *reserve]),
                               "--", f"paths.root_dir={tmp_path}", *TINY_PRETRAIN],
                              env=env, cwd=REPO, capture_output=True, text=True, timeout=120)  # fmt: skip
        assert proc.returncode == 1, proc.stdout + proc.stderr
        assert proc.stderr.splitlines()[-1] == (
            "supervisor: gave up: retry budget spent: 1 job(s), 0 resubmission(s); "
            "failures: failed: a node failed its health check (exit 76)"
        )
        assert [e["kind"] for e in read_events(tmp_path / "run")][-1] == "gave_up"


@pytest.mark.slow
@pytest.mark.distributed
def test_unhealthy_node_and_straggler_are_drained_and_the_run_finishes_without_them(tmp_path):
    with cluster() as env:
        run_dir = tmp_path / "run"
        health = "--min-free-bytes 1000 --test-reserve zaya-n1=10000000000000000"
        # rank 1 sleeps 1 s in each forward: with two ranks it is named when its time is over 1.5 x the median,
        # i.e. while rank 0's forward stays under ~0.33 s (0.1 s failed in CI: a loaded first step is slower)
        straggler = ["logging.log_every_steps=1", "train.cluster.straggler.m=2", "train.cluster.straggler.action=stop",
                     "train.cluster.straggler.test_sleep_s=1.0", "train.cluster.straggler.test_sleep_rank=1",
                 "train.faults.injections=[{kind:sigkill,at_step:3}]"]  # fmt: skip
        try:
            proc = subprocess.run([*SUPERVISE, "--run-dir", str(run_dir), "--nodes", "2", *FAST, "--health-args", health,
                                   "--", f"paths.root_dir={tmp_path}", "train.device=cpu", *TINY_PRETRAIN, *straggler],
                                  env=env, cwd=REPO, capture_output=True, text=True, timeout=300)  # fmt: skip
            drained = subprocess.run(["sinfo", "-h", "-N", "-R", "-o", "%N|%E"], env=env, capture_output=True,
                                     text=True).stdout  # fmt: skip
        finally:
            resume_nodes(env, ["zaya-n1", "zaya-n3"])
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
        assert proc.stdout.splitlines()[-1].startswith("supervisor: run finished in job ")
        events = read_events(run_dir)
        submitted = [e for e in events if e["kind"] == "job_submitted"]
        assert [(e["nodes"], e["exclude"]) for e in submitted] == [
            (2, []),
            (2, ["zaya-n1"]),
            (1, ["zaya-n1", "zaya-n3"]),
            (1, ["zaya-n1", "zaya-n3"]),
        ]
        excluded = {e["node"]: e["reason"] for e in events if e["kind"] == "node_excluded"}
        assert excluded["zaya-n1"].startswith("checkpoint_room: ") and "test reserve" in excluded["zaya-n1"]
        assert excluded["zaya-n3"].startswith("straggler: rank 1 ")
        assert "zaya-n1|zaya job" in drained and "checkpoint_room" in drained and "zaya-n3|zaya job" in drained
        (found,) = [e for e in events if e["kind"] == "straggler"]
        assert (
            found["node"] == "zaya-n3"
            and found["straggler_rank"] == 1
            and found["forward_ms"] > 1.5 * found["median_ms"]
        )
        report = json.loads((run_dir / "health" / f"job-{submitted[0]['job_id']}" / "zaya-n1.json").read_text())
        assert not report["healthy"] and {c["name"]: c["ok"] for c in report["checks"]}["nvidia_smi"] is None
        # Job 2 ran 2 ranks (two train states in its checkpoint); job 3 resumed from it on 1 node and finished.
        assert len(list((run_dir / "checkpoints" / "step_00000002").glob("train-rank*.pkl"))) == 2
        # Job 3's training process was SIGKILLed at step 3: its node passed the health check after the failure
        # (not excluded), job 4 resumed from step 2 again and finished.
        killed = [e for e in events if e["kind"] == "job_failed"][-1]
        assert killed["job_id"] == submitted[2]["job_id"] and killed["failure"].startswith("failed: exit ")
        after = run_dir / "health" / f"after-job-{killed['job_id']}" / "zaya-n2.json"
        assert json.loads(after.read_text())["healthy"] and set(excluded) == {"zaya-n1", "zaya-n3"}
        assert [e["step"] for e in events if e["kind"] == "restart"] == [2, 2]
        assert len(list((run_dir / "checkpoints" / "step_00000003").glob("train-rank*.pkl"))) == 1
        assert json.loads((run_dir / "summary.json").read_text())["steps"] == 3


@pytest.mark.slow
@slurm_long(45, "the SIGKILL path is also in the test above, without the byte check")
def test_sigkilled_training_comes_back_by_itself_bitwise_equal(tmp_path):
    """The training process is SIGKILLed at step 3 (a fault injection, once): the job fails, its node passes
    the health check again, the supervisor resubmits, the run resumes from step 2 and its final checkpoint
    holds the same bytes as an uninterrupted run submitted beside it."""
    with cluster() as env:
        common = ["train.device=cpu", *TINY_PRETRAIN]  # each run its own data cache: two preparers may not share one
        ref_env = dict(env, RUN_DIR=str(tmp_path / "ref"), PYTHON=sys.executable, NPROC="1", ZAYA_REPO=str(REPO),
                       HEALTH_ARGS="--min-free-bytes 1000")  # fmt: skip
        reference = subprocess.Popen(["sbatch", "--parsable", "--wait", "--nodes=1", "--time=5",
                                      f"--output={tmp_path / 'ref.out'}", "infra/slurm/pretrain_job.sh", *common,
                                      f"paths.root_dir={tmp_path / 'ref-root'}"],
                                     env=ref_env, cwd=REPO, stdout=subprocess.PIPE, text=True)  # fmt: skip
        run_dir = tmp_path / "run"
        proc = subprocess.run([*SUPERVISE, "--run-dir", str(run_dir), "--nodes", "1", *FAST, "--health-args",
                               "--min-free-bytes 1000", "--", *common, f"paths.root_dir={tmp_path / 'root'}",
                               "train.faults.injections=[{kind:sigkill,at_step:3}]"],
                              env=env, cwd=REPO, capture_output=True, text=True, timeout=300)  # fmt: skip
        reference.communicate(timeout=300)
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
        assert reference.returncode == 0, (tmp_path / "ref.out").read_text()[-3000:]
        events = read_events(run_dir)
        (failed,) = [e for e in events if e["kind"] == "job_failed"]
        assert failed["failure"].startswith("failed: exit ")
        assert not [e for e in events if e["kind"] == "node_excluded"]  # its node passed the check after the failure
        assert json.loads(
            (run_dir / "health" / f"after-job-{failed['job_id']}" / f"{failed['nodes'][0]}.json").read_text()
        )["healthy"]
        assert [e["step"] for e in events if e["kind"] == "restart"] == [2]
        final, ref = run_dir / "checkpoints" / "step_00000003", tmp_path / "ref" / "checkpoints" / "step_00000003"
        shards = sorted(p.name for p in ref.glob("*.distcp"))
        assert shards and sorted(p.name for p in final.glob("*.distcp")) == shards
        for name in shards:
            assert (final / name).read_bytes() == (ref / name).read_bytes(), name


@pytest.mark.slow
@slurm_long(40)
def test_the_same_step_failing_every_time_gives_up_with_one_line(tmp_path):
    """A crash at step 2 on every attempt: after two failed attempts at that step, the third stops at its
    start (zaya-train's crash-loop detector, exit 74) and the supervisor gives up instead of resubmitting."""
    with cluster() as env:
        run_dir = tmp_path / "run"
        proc = subprocess.run([*SUPERVISE, "--run-dir", str(run_dir), "--nodes", "1", "--max-retries", "5", *FAST,
                               "--health-args", "--min-free-bytes 1000", "--", f"paths.root_dir={tmp_path}",
                               "train.device=cpu", *TINY_PRETRAIN, "train.resilience.crash_loop.max_same_step_failures=2",
                               "train.faults.injections=[{kind:crash,at_step:2,once:false}]"],
                              env=env, cwd=REPO, capture_output=True, text=True, timeout=300)  # fmt: skip
        assert proc.returncode == 1, proc.stdout[-3000:] + proc.stderr[-3000:]
        assert proc.stderr.splitlines()[-1] == (
            "supervisor: gave up: the same step failed on every recent attempt (step 2); "
            f"not resubmitting: see {run_dir / 'crash_loop.json'}"
        )
        assert len([e for e in read_events(run_dir) if e["kind"] == "job_submitted"]) == 3
