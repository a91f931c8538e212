"""The local Slurm cluster (`make slurm-up`): 3 nodes (one slurmd each, own ports) on this host answer sinfo,
run a 2-node srun step on two different nodes; a second `up` is a no-op; `down` leaves no daemon (checked on a
second, 1-node cluster of its own, so the shared one stays up for the other tests)."""

import os
import subprocess

from slurm_cluster import CLUSTER, REPO, cluster, run


def test_sinfo_lists_the_nodes_and_srun_spans_two_of_them():
    with cluster() as env:
        check_nodes_and_srun(env)


def check_nodes_and_srun(env: dict[str, str]) -> None:
    nodes = run(["sinfo", "-h", "-N", "-o", "%N"], env).stdout.split()
    assert sorted(set(nodes)) == ["zaya-n1", "zaya-n2", "zaya-n3"]
    out = run(["srun", "--nodes=2", "--ntasks-per-node=1", "--time=1", "bash", "-c", "echo $SLURMD_NODENAME"], env)
    assert len(set(out.stdout.split())) == 2
    # infra/README.md's `sinfo` and `squeue` as written
    assert "debug*" in run(["sinfo"], env).stdout
    assert run(["squeue"], env).stdout.split()[:2] == ["JOBID", "PARTITION"]


def test_a_second_up_is_a_no_op_and_down_stops_every_daemon(tmp_path):
    state = tmp_path / "s"
    env = dict(os.environ, ZAYA_SLURM_STATE=str(state), SLURM_NODES="1", SLURM_CTLD_PORT="16917",
               SLURM_CONF=str(state / "etc" / "slurm.conf"))  # fmt: skip
    try:
        assert "up: 1 nodes" in run([str(CLUSTER), "up"], env).stdout
        pids = sorted(p.read_text() for p in (state / "run").glob("*.pid"))
        assert len(pids) == 3  # munged, slurmctld, one slurmd
        assert "already up" in run([str(CLUSTER), "up"], env).stdout
        assert sorted(p.read_text() for p in (state / "run").glob("*.pid")) == pids
        assert run(["sinfo", "-h", "-o", "%D %T"], env).stdout.split() == ["1", "idle"]
    finally:
        run([str(CLUSTER), "down"], env)
    for pid in pids:
        assert subprocess.run(["kill", "-0", pid.strip()], capture_output=True).returncode != 0, pid
    assert not list((state / "run").glob("*.pid"))
    assert subprocess.run([str(CLUSTER), "status"], env=env, cwd=REPO).returncode != 0
