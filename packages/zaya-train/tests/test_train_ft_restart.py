"""In-job restart under torchrun --max-restarts with 2 gloo ranks on the real Trainer, and crash-loop stop."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from zaya_train.resilience import ExitCode, read_events

pytestmark = [pytest.mark.slow, pytest.mark.distributed]
# Workers get their own TCPStore per attempt: with the agent's shared store (torch's default) the keys of
# the previous attempt's gloo mesh are still there and a restarted rank can dial a dead peer's address.
ENV = {
    **os.environ,
    "PYTHONPATH": os.pathsep.join(sys.path),
    "OMP_NUM_THREADS": "1",
    "TORCH_DISABLE_SHARE_RDZV_TCP_STORE": "1",
}


def _torchrun(run_dir: Path, cache: Path, max_restarts: int, *extra: str) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2",
           "--max-restarts", str(max_restarts), "--monitor-interval", "0.5",
           "-m", "zaya_train.resilience.drill", "--run-dir", str(run_dir), "--cache-dir", str(cache),
           "--steps", "8", "--every", "2", "--eval-every", "1000", *extra]  # fmt: skip
    return subprocess.run(cmd, capture_output=True, text=True, env=ENV, timeout=400)


def test_crashed_worker_restarts_the_group_and_training_resumes(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    result = _torchrun(run_dir, tmp_path / "cache", 2, "--fault", "crash:5:1")  # rank 1 raises at step 5
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-4000:]
    final = json.loads((run_dir / "final_state.json").read_text())
    assert final["step"] == 8
    (fault,) = read_events(run_dir, "fault_injected")
    assert fault["rank"] == 1 and fault["step"] == 5
    (restart,) = read_events(run_dir, "restart")
    assert restart["step"] == 4 and restart["restart_count"] == 1  # resumed from the step-4 checkpoint
    assert "injected crash at step 5 on rank 1" in result.stderr


def test_same_step_failing_repeatedly_stops_with_a_crash_loop_report(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    result = _torchrun(run_dir, tmp_path / "cache", 2, "--fault", "crash:5", "--faults-repeat",
                       "--max-same-step-failures", "2")  # fmt: skip
    assert result.returncode != 0
    report = json.loads((run_dir / "crash_loop.json").read_text())
    assert report["failing_step"] == 5 and len(report["failed_attempts"]) == 2
    assert "crash loop: the last 2 attempts all failed at step 5" in result.stderr
    assert f"exitcode  : {int(ExitCode.CRASH_LOOP)}" in result.stderr  # torchrun's failure summary
    assert not (run_dir / "final_state.json").exists()
    assert read_events(run_dir, "crash_loop")
