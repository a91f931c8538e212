"""Exact resume and the anomaly / preemption / hang policies on the real Trainer, in real processes.

Each case runs `zaya_train.resilience.drill` (zaya1-tiny on two stdlib packages, checkpoints every 2
steps) as a subprocess and compares its final state hash — weights, optimizer state, progress and
loss history, sampler position, RNG states — and its per-step metrics against an uninterrupted run.
"""

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from zaya_train.resilience import ExitCode, read_events

pytestmark = pytest.mark.slow
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), "OMP_NUM_THREADS": "1"}
STEPS, EVERY = 8, 2


def _drill_cmd(run_dir: Path, cache: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "zaya_train.resilience.drill", "--run-dir", str(run_dir), "--cache-dir", str(cache),
            "--steps", str(STEPS), "--every", str(EVERY), *extra]  # fmt: skip


def _run(run_dir: Path, cache: Path, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run(_drill_cmd(run_dir, cache, *extra), capture_output=True, text=True, env=ENV, timeout=300)


def _final(run_dir: Path) -> dict:
    return json.loads((run_dir / "final_state.json").read_text())


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("data-cache")


@pytest.fixture(scope="module")
def reference(cache: Path) -> dict:
    """The uninterrupted drill's final state (its hash names no path): run once and shared by every test process
    of a session and later sessions (tests/artifact_cache.py), keyed by the training sources and the drill's
    command line."""
    import inspect

    from trained_runs import cached_run, run_dir_key

    def build(folder: Path) -> None:
        result = _run(folder / "run", cache)
        assert result.returncode == 0, result.stderr[-3000:]

    key = run_dir_key(inspect.getsource(_drill_cmd), f"steps {STEPS} every {EVERY}")
    return _final(cached_run("zaya-train-drill-reference", key, build) / "run")


def _attempts(run_dir: Path) -> int:
    return len(list((run_dir / "attempts").glob("attempt-*.json")))


def _current_step(run_dir: Path) -> int:
    newest = max((run_dir / "attempts").glob("attempt-*.json"))
    try:
        return json.loads(newest.read_text())["current_step"]
    except (OSError, ValueError):
        return -1


def _in_save(checkpoints: Path) -> bool:
    return checkpoints.is_dir() and any(p.name.startswith(".tmp.") for p in checkpoints.iterdir())


@pytest.mark.parametrize("async_save", [False, True], ids=["sync", "async"])
def test_sigkill_at_random_moments_resumes_bitwise(tmp_path: Path, cache: Path, reference: dict, async_save: bool):
    extra = ("--async-save",) if async_save else ()
    run_dir, rng = tmp_path / "run", random.Random(5 + async_save)
    kills, kills_in_save = 0, 0
    targets = [None, rng.randint(3, STEPS - 2)]  # None: whenever a save is in flight
    for attempt in range(12):
        recorded = _attempts(run_dir)
        proc = subprocess.Popen(_drill_cmd(run_dir, cache, *extra), stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, env=ENV)  # fmt: skip
        # A step of this drill takes ~30-60 ms: the random moment must fall inside the run, not after its end.
        target, delay, reached = (targets[kills] if kills < len(targets) else -1), rng.uniform(0.0, 0.03), None
        while target != -1 and proc.poll() is None:
            if target is None:
                due = _in_save(run_dir / "checkpoints")
            else:  # a random moment inside step `target` (or later, if resumed past it)
                if reached is None and _attempts(run_dir) > recorded and _current_step(run_dir) >= target:
                    reached = time.monotonic()
                due = reached is not None and time.monotonic() - reached > delay
            if due:
                kills_in_save += _in_save(run_dir / "checkpoints")
                proc.send_signal(signal.SIGKILL)
                kills += 1
                break
            time.sleep(0.005)
        proc.wait(timeout=300)
        if proc.returncode == 0:
            break
        assert proc.returncode == -signal.SIGKILL, f"attempt {attempt} failed with {proc.returncode}"
    assert kills == len(targets) and kills_in_save >= 1
    final = _final(run_dir)
    assert final["parts"] == reference["parts"]  # weights, optimizer, progress/losses, sampler, RNG: bitwise
    assert final["state_hash"] == reference["state_hash"]
    assert final["metrics_digest"] == reference["metrics_digest"]
    assert _attempts(run_dir) == len(targets) + 1 and len(read_events(run_dir, "completed")) == 1


def test_sigterm_saves_exits_cleanly_and_resumes_exactly(tmp_path: Path, cache: Path, reference: dict) -> None:
    run_dir = tmp_path / "run"
    first = _run(run_dir, cache, "--fault", "sigterm:5")
    assert first.returncode == 0, first.stderr[-3000:]
    (event,) = read_events(run_dir, "preempted")
    assert event["saved"] and event["step"] == 5  # step 5 finished, then the save, then a clean exit
    assert (run_dir / "checkpoints" / "step_00000005" / "manifest.json").is_file()
    assert not (run_dir / "final_state.json").exists()
    second = _run(run_dir, cache, "--fault", "sigterm:5")
    assert second.returncode == 0, second.stderr[-3000:]
    assert _final(run_dir)["state_hash"] == reference["state_hash"]


def test_corrupt_latest_checkpoint_is_skipped_on_resume(tmp_path: Path, cache: Path, reference: dict) -> None:
    run_dir = tmp_path / "run"
    killed = _run(run_dir, cache, "--fault", "corrupt_checkpoint:6", "--fault", "sigkill:7")
    assert killed.returncode == -signal.SIGKILL
    (corrupted,) = read_events(run_dir, "checkpoint_corrupted")
    resumed = _run(run_dir, cache)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert f"skipping checkpoint {run_dir / 'checkpoints' / 'step_00000006'}" in resumed.stderr
    assert Path(corrupted["file"]).name in resumed.stderr  # the warning names the bad file
    (restart,) = read_events(run_dir, "restart")
    assert restart["step"] == 4  # the previous valid checkpoint
    assert _final(run_dir)["state_hash"] == reference["state_hash"]


def test_nan_rollback_skips_the_data_window(tmp_path: Path, cache: Path, reference: dict) -> None:
    run_dir = tmp_path / "run"
    result = _run(run_dir, cache, "--anomaly-policy", "rollback", "--fault", "nan:7")
    assert result.returncode == 0, result.stderr[-3000:]
    kinds = [e["kind"] for e in read_events(run_dir)]
    assert kinds.index("fault_injected") < kinds.index("anomaly_rollback") < kinds.index("rollback")
    (rollback,) = read_events(run_dir, "rollback")
    assert rollback["step"] == 7 and rollback["to_step"] == 6 and rollback["data_window_skipped"]
    final = _final(run_dir)
    assert final["step"] == STEPS
    drawn = sum(final["sampler_state"]["drawn"].values())
    assert drawn == sum(reference["sampler_state"]["drawn"].values()) + 4  # the poisoned batch is never retried
    assert final["parts"]["model"] != reference["parts"]["model"]


def test_nan_skip_bounded_then_stops_with_exit_code(tmp_path: Path, cache: Path) -> None:
    run_dir = tmp_path / "run"
    looping = _run(run_dir, cache, "--fault", "nan:3", "--faults-repeat")  # every batch tried at step 3 is NaN
    assert looping.returncode == ExitCode.ANOMALY_LIMIT, looping.stderr[-3000:]
    assert "max_consecutive_skips" in looping.stderr
    skips = read_events(run_dir, "anomaly_skip")
    assert [e["step"] for e in skips] == [3] * 5 and [e["consecutive"] for e in skips] == [1, 2, 3, 4, 5]
    assert read_events(run_dir, "anomaly_stop")[0]["consecutive"] == 6


def test_hang_in_the_loop_dumps_stacks_and_exits(tmp_path: Path, cache: Path) -> None:
    run_dir = tmp_path / "run"
    result = _run(run_dir, cache, "--fault", "hang:4", "--hang-timeout-s", "3")
    assert result.returncode == ExitCode.HANG, result.stderr[-3000:]
    dump = (run_dir / "stacks" / "hang-rank00000.txt").read_text()
    assert "before_step" in dump and '"MainThread"' in dump
    (hang,) = read_events(run_dir, "hang")
    assert hang["step"] == 3
