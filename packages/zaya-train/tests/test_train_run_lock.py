"""One trainer per run dir: a second process is refused with the holder's PID; a killed holder frees it."""

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from zaya_train.errors import ZayaTrainError
from zaya_train.run_lock import acquire_run_dir, release_run_dir

ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
HOLDER = (
    "import sys, time\n"
    "from pathlib import Path\n"
    "from zaya_train.run_lock import acquire_run_dir\n"
    "acquire_run_dir(Path(sys.argv[1]))\n"
    "print('locked', flush=True)\n"
    "time.sleep(600)\n"
)


def _holder(run_dir: Path) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-c", HOLDER, str(run_dir)], stdout=subprocess.PIPE, text=True, env=ENV)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "locked"
    return proc


def test_a_second_process_is_refused_until_the_holder_is_killed(tmp_path: Path) -> None:
    proc = _holder(tmp_path)
    try:
        with pytest.raises(ZayaTrainError, match=rf"in use by another training process \(pid {proc.pid}"):
            acquire_run_dir(tmp_path)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    lock = acquire_run_dir(tmp_path)  # the kernel dropped the dead holder's lock
    assert lock is not None and lock.read_text().strip() == str(os.getpid())
    release_run_dir(lock)


def test_the_lock_is_reentrant_within_a_process_and_the_last_release_frees_it(tmp_path: Path) -> None:
    first, second = acquire_run_dir(tmp_path), acquire_run_dir(tmp_path)
    assert first == second
    release_run_dir(first)
    probe = [sys.executable, "-c", "import sys\nfrom pathlib import Path\nfrom zaya_train.run_lock import "
             "acquire_run_dir\nacquire_run_dir(Path(sys.argv[1]))", str(tmp_path)]  # fmt: skip
    assert subprocess.run(probe, env=ENV, capture_output=True).returncode != 0  # still held once
    release_run_dir(second)
    assert subprocess.run(probe, env=ENV, capture_output=True).returncode == 0


def test_a_trainer_that_fails_to_build_leaves_the_run_dir_free(tmp_path: Path, make_trainer) -> None:
    from zaya_train.config import CheckpointConfig

    in_the_way = tmp_path / "not-a-folder"
    in_the_way.write_text("a file where the checkpoints folder should go")
    run_dir = tmp_path / "run"
    with pytest.raises(OSError):  # the checkpoint manager, built last, cannot make its folder
        make_trainer(run_dir=run_dir, checkpoint=CheckpointConfig(dir=str(in_the_way / "checkpoints")))
    assert (run_dir / ".lock").is_file()  # the lock was taken before the failure ...
    probe = [sys.executable, "-c", "import sys\nfrom pathlib import Path\nfrom zaya_train.run_lock import "
             "acquire_run_dir\nacquire_run_dir(Path(sys.argv[1]))", str(run_dir)]  # fmt: skip
    assert subprocess.run(probe, env=ENV, capture_output=True).returncode == 0  # ... and given back
    make_trainer(run_dir=run_dir)  # and the same run dir builds a trainer in this process
