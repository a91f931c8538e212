"""The fault-tolerance parts one at a time, with real processes, real signals and real files.

Watchdog and preemption run in a child process (this file run as a script) whose exit code and files
are checked; the anomaly guard, fault injector and crash-loop detector are checked directly.
"""

import math
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import torch
from zaya_config import ZayaConfigError, validate_node
from zaya_train.checkpoint import CheckpointManager, verify_manifest
from zaya_train.resilience import (
    AnomalyAction,
    AnomalyConfig,
    AnomalyGuard,
    AnomalyLimitError,
    CrashLoopDetector,
    CrashLoopError,
    EventLog,
    ExitCode,
    FaultInjector,
    FaultsConfig,
    FaultSpec,
    HangWatchdog,
    InjectedCrash,
    PreemptionHandler,
    ResilienceConfig,
    read_events,
)

ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}


def _child(*args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, __file__, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=ENV)  # fmt: skip


# ---------------------------------------------------------------- watchdog
def _hang_worker(run_dir: str) -> None:
    """Slow first step (allowed), three quick steps, then a hang in the main thread with a second thread alive."""
    events = EventLog(Path(run_dir))
    dog = HangWatchdog(timeout_s=0.6, first_step_timeout_s=4.0, dump_dir=Path(run_dir), events=events, poll_s=0.05)
    dog.start()
    time.sleep(1.2)  # longer than timeout_s, shorter than first_step_timeout_s
    for step in range(1, 4):
        dog.beat(step)
        print(f"step {step}", flush=True)
        time.sleep(0.05)
    threading.Thread(target=_data_loader_blocked, name="data-loader", daemon=True).start()
    _stuck_in_collective()


def _data_loader_blocked() -> None:
    time.sleep(3600)


def _stuck_in_collective() -> None:
    time.sleep(3600)


@pytest.mark.slow
def test_watchdog_dumps_every_stack_and_exits_with_hang_code(tmp_path: Path) -> None:
    proc = _child("hang", str(tmp_path))
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == ExitCode.HANG, err
    assert out.splitlines() == ["step 1", "step 2", "step 3"]  # the slow first step did not trigger it
    dump = (tmp_path / "hang-rank00000.txt").read_text()
    assert '"data-loader"' in dump and "_data_loader_blocked" in dump and "_stuck_in_collective" in dump
    (hang,) = read_events(tmp_path, "hang")
    assert hang["step"] == 3 and hang["exit_code"] == ExitCode.HANG


# ---------------------------------------------------------------- preemption
def _preempt_worker(run_dir: str, grace_s: str, save_hangs: str) -> None:
    """A loop that saves a real checkpoint and exits when SIGTERM arrives (or hangs in the save)."""
    events = EventLog(Path(run_dir))
    handler = PreemptionHandler(float(grace_s), Path(run_dir), events=events).install()
    manager = CheckpointManager(Path(run_dir) / "checkpoints")
    weights = torch.zeros(1000)
    for step in range(1, 10_000):
        weights += 1
        print(f"step {step}", flush=True)
        time.sleep(0.02)
        if handler.should_stop():
            if save_hangs == "1":
                time.sleep(3600)
            manager.save(step, {"model": {"w": weights}, "train": {"step": step}})
            handler.exit(step, saved=True)


@pytest.mark.slow
def test_sigterm_saves_then_exits_cleanly(tmp_path: Path) -> None:
    proc = _child("preempt", str(tmp_path), "30", "0")
    assert proc.stdout is not None
    while proc.stdout.readline().strip() != "step 5":
        pass
    proc.send_signal(signal.SIGTERM)
    proc.communicate(timeout=60)
    assert proc.returncode == 0
    (event,) = read_events(tmp_path, "preempted")
    assert event["saved"] and event["signal"] == signal.SIGTERM and event["step"] >= 5
    state = {"model": {"w": torch.zeros(1000)}, "train": {}}
    assert CheckpointManager(tmp_path / "checkpoints").load_latest(state) == event["step"]
    assert torch.equal(state["model"]["w"], torch.full((1000,), float(event["step"])))


@pytest.mark.slow
def test_sigterm_grace_time_bounds_a_stuck_save(tmp_path: Path) -> None:
    proc = _child("preempt", str(tmp_path), "1.0", "1")
    assert proc.stdout is not None
    while proc.stdout.readline().strip() != "step 2":
        pass
    sent = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    proc.communicate(timeout=60)
    assert proc.returncode == ExitCode.PREEMPT_TIMEOUT
    assert time.monotonic() - sent < 30  # gone long before anyone would SIGKILL it
    assert "_preempt_worker" in (tmp_path / "preempt-timeout-rank00000.txt").read_text()
    assert read_events(tmp_path, "preempt_timeout")


# ---------------------------------------------------------------- anomaly guard
def test_anomaly_guard_skips_nonfinite_and_spikes_with_bounds(tmp_path: Path) -> None:
    events = EventLog(tmp_path)
    guard = AnomalyGuard(AnomalyConfig(window=8, min_history=4, k_std=3.0, max_consecutive_skips=2), events)
    losses = [2.0, 2.1, 1.9, 2.05, 2.0]
    assert all(guard.check(i, x) is AnomalyAction.ACCEPT for i, x in enumerate(losses))
    assert guard.check(5, math.nan) is AnomalyAction.SKIP
    assert guard.check(6, 2.0, grad_norm=math.inf) is AnomalyAction.SKIP
    with pytest.raises(AnomalyLimitError, match="3 anomalous steps in a row"):
        guard.check(7, 50.0)  # a spike, and the third anomaly in a row
    kinds = [e["kind"] for e in read_events(tmp_path)]
    assert kinds == ["anomaly_skip", "anomaly_skip", "anomaly_stop"]
    assert "loss spike" in read_events(tmp_path)[-1]["reason"]

    rollback = AnomalyGuard(AnomalyConfig(policy="rollback", window=4, min_history=2, max_rollbacks=1))
    rollback.check(0, 1.0), rollback.check(1, 1.0)
    assert rollback.check(2, math.nan) is AnomalyAction.ROLLBACK
    assert rollback.check(3, 1.0) is AnomalyAction.ACCEPT
    with pytest.raises(AnomalyLimitError, match="max_rollbacks"):
        rollback.check(4, math.nan)
    restored = AnomalyGuard(AnomalyConfig(policy="rollback", window=4, min_history=2, max_rollbacks=1))
    restored.load_state_dict(rollback.state_dict())
    assert restored.state_dict() == rollback.state_dict()


# ---------------------------------------------------------------- fault injection
def test_faults_fire_once_across_restarts_and_corrupt_a_real_checkpoint(tmp_path: Path) -> None:
    cfg = FaultsConfig(injections=[FaultSpec(kind="crash", at_step=3), FaultSpec(kind="nan", at_step=2, once=False),
                                   FaultSpec(kind="corrupt_checkpoint", at_step=4)])  # fmt: skip
    first = FaultInjector(cfg, tmp_path / "faults", events=EventLog(tmp_path))
    first.before_step(2)
    with pytest.raises(InjectedCrash, match="step 3"):
        first.before_step(3)
    restarted = FaultInjector(cfg, tmp_path / "faults")
    restarted.before_step(3)  # the marker says it already fired: the restarted run passes step 3
    assert first.poison_loss(2) and restarted.poison_loss(2) and not restarted.poison_loss(3)

    folder = CheckpointManager(tmp_path / "ckpt").save(4, {"model": {"w": torch.arange(4096.0)}, "train": {}})
    assert verify_manifest(folder) is None
    restarted.after_save(4, folder)
    problem = verify_manifest(folder)
    assert problem is not None and "sha256" in problem.reason and problem.path.suffix == ".distcp"


def test_random_faults_are_seeded() -> None:
    spec = FaultSpec(kind="crash", probability=0.2, once=False)

    def fired(seed: int) -> list[int]:
        injector = FaultInjector(FaultsConfig(seed=seed, injections=[spec]), Path("/nonexistent"))
        return [s for s in range(1, 200) if injector._due(0, spec, s)]

    assert fired(1) == fired(1) != fired(2)
    assert 20 < len(fired(1)) < 60


@pytest.mark.slow
def test_sigkill_fault_kills_the_process_for_real(tmp_path: Path) -> None:
    proc = _child("sigkill", str(tmp_path))
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == -signal.SIGKILL and out.split() == ["1", "2"]


def _sigkill_worker(run_dir: str) -> None:
    injector = FaultInjector(FaultsConfig(injections=[FaultSpec(kind="sigkill", at_step=3)]), Path(run_dir))
    for step in range(1, 6):
        injector.before_step(step)
        print(step, flush=True)


# ---------------------------------------------------------------- crash loop
def test_crash_loop_detected_after_same_step_fails_repeatedly(tmp_path: Path) -> None:
    def attempt(resume: int, reach: int, clean: bool = False) -> None:
        detector = CrashLoopDetector(tmp_path, max_same_step_failures=2, events=EventLog(tmp_path))
        detector.start(resume)
        for step in range(resume + 1, reach + 1):
            detector.step_started(step)
        if clean:
            detector.finish("preempted")

    attempt(0, 7)  # crashed at 7
    attempt(5, 9, clean=True)  # preempted at 9: a clean end breaks the chain
    attempt(5, 7)  # crashed at 7 again
    attempt(5, 7)  # and again: two failures in a row at step 7
    with pytest.raises(CrashLoopError, match="failed at step 7"):
        attempt(5, 6)
    report = (tmp_path / "crash_loop.json").read_text()
    assert '"failing_step": 7' in report
    assert [e["kind"] for e in read_events(tmp_path)][-1] == "crash_loop"


def test_config_validation_names_the_bad_key() -> None:
    with pytest.raises(ZayaConfigError, match=r"anomaly\.policy = 'retry'"):
        validate_node("train.resilience", {"anomaly": {"policy": "retry"}}, ResilienceConfig)
    with pytest.raises(ZayaConfigError, match=r"injections\[0\]\.kind = 'meteor'"):
        validate_node("train.faults", {"injections": [{"kind": "meteor", "at_step": 3}]}, FaultsConfig)
    with pytest.raises(ZayaConfigError, match="first_step_timeout_s"):
        validate_node("train.resilience", {"watchdog": {"timeout_s": 10, "first_step_timeout_s": 5}}, ResilienceConfig)
    assert validate_node("train.faults", {"injections": [{"kind": "nan", "at_step": 2}]}, FaultsConfig).injections


if __name__ == "__main__":
    workers = {"hang": _hang_worker, "preempt": _preempt_worker, "sigkill": _sigkill_worker}
    workers[sys.argv[1]](*sys.argv[2:])


def test_checkpoint_saved_is_written_only_once_an_async_save_is_committed(make_trainer, tmp_path: Path) -> None:
    """An asynchronous save commits steps after it starts; `checkpoint_saved` (what scripts and people read
    as "safe to kill now") must wait for the committed folder, and every committed save gets one event."""
    from zaya_config.train_checkpoint.layout import tmp_dir_name
    from zaya_train.config import CheckpointConfig

    run_dir = tmp_path / "run"
    trainer = make_trainer(run_dir=run_dir, checkpoint=CheckpointConfig(every_steps=1, keep_last=5, async_save=True))

    def step() -> None:  # one iteration of Trainer.run's loop
        metrics = trainer.train_step(trainer.sampler.next_batch(trainer.global_batch_size()))
        trainer.end_step(metrics)  # saves this step asynchronously

    trainer._enter_next()  # the first phase, as `run` starts it
    gate = threading.Event()
    trainer.checkpoints._executor.submit(gate.wait)  # the save thread is busy: step 1's commit waits behind it
    try:
        step()
        assert read_events(run_dir, "checkpoint_saved") == []
        assert (trainer.checkpoints.root / tmp_dir_name(1)).is_dir()
    finally:
        gate.set()
    step()  # saving step 2 first waits for step 1's commit
    trainer.checkpoints.wait()
    trainer.end_run({})  # the end of `run`: committed saves announced, then the hooks' on_end
    events = read_events(run_dir, "checkpoint_saved")
    assert [e["step"] for e in events] == [1, 2]
    for event in events:
        assert verify_manifest(Path(event["folder"])) is None
