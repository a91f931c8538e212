"""The local Slurm cluster of `make slurm-up` (infra/slurm/cluster.sh), for the tests that submit to it.

Without it those tests skip with the reason, so a developer's `make test` passes; under `.ci/run`
(ZAYA_REQUIRE_SLURM=1, set after `make slurm-up`) a missing cluster fails them instead. They submit one at a
time (`cluster()`).
"""

import contextlib
import fcntl
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
CLUSTER = REPO / "infra" / "slurm" / "cluster.sh"
SLURM_CONF = REPO / ".slurm" / "etc" / "slurm.conf"
# The smallest pretrain run: 3 steps of zaya1-tiny (2 of 16 x 128, 1 of 16 x 256), a checkpoint every 2.
TINY_PRETRAIN = [
    "recipe.phases.0.tokens=4096",
    "recipe.phases.1.tokens=4096",
    "train.data.sources.library.max_files=60",
    "train.data.sources.tests.max_files=80",
    "train.data.val_fraction=0.15",
    "train.eval.every_steps=100",
    "train.eval.sequences=4",
    "train.eval.sample_tokens=4",
    "train.eval.downstream.limit=4",
    "train.checkpoint.every_steps=2",
    "train.plots=false",
]


def slurm_long(seconds: int, why: str = ""):
    """Marks a Slurm test over the suite's 60 s budget: it runs only with ZAYA_SLURM_LONG=1 (infra/README.md)."""
    reason = f"~{seconds} s, over the Slurm tests' budget: ZAYA_SLURM_LONG=1 runs it" + (f" ({why})" if why else "")
    return pytest.mark.skipif(os.environ.get("ZAYA_SLURM_LONG") != "1", reason=reason)


def slurm_env() -> dict[str, str]:
    """This environment with SLURM_CONF pointing at the local cluster; skips (or fails in CI) when it is down."""
    env = dict(os.environ, SLURM_CONF=str(SLURM_CONF))
    up = SLURM_CONF.is_file() and subprocess.run([str(CLUSTER), "status"], env=env, capture_output=True).returncode == 0
    if not up:
        why = "no local Slurm cluster answers: run `make slurm-up` first (.ci/run does)"
        if os.environ.get("ZAYA_REQUIRE_SLURM") == "1":
            pytest.fail(why)
        pytest.skip(why)
    return env


@contextlib.contextmanager
def cluster() -> Iterator[dict[str, str]]:
    """`slurm_env()`, held alone: the tests drain nodes and expect jobs on the lowest-numbered free ones, so one
    test at a time submits (an inter-process lock under .slurm/, for pytest-xdist's workers)."""
    env = slurm_env()
    with open(SLURM_CONF.parents[1] / "tests.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield env


def run(cmd: list[str], env: dict[str, str], timeout: float = 120, **kwargs) -> subprocess.CompletedProcess:
    """A command against the cluster; its output in the assertion message when it fails."""
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout, **kwargs)
    assert proc.returncode == 0, f"{cmd}: {proc.returncode}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return proc


def resume_nodes(env: dict[str, str], nodes: list[str]) -> None:
    """Give drained nodes back to the shared cluster (other tests submit to it too)."""
    if nodes:
        subprocess.run(["scontrol", "update", f"nodename={','.join(nodes)}", "state=resume"], env=env,
                       capture_output=True)  # fmt: skip
