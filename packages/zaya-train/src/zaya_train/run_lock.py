"""One training process per run dir: an exclusive `flock` on `RUN_DIR/.lock`, held for the trainer's life.

Two trainers on one run dir would interleave metrics.jsonl and race on its checkpoints. That happens after a
kill that misses the trainer (a launcher's PID killed, its child left running) and a restart. The kernel drops
a `flock` when its holder dies, SIGKILL included, so a resume after a crash always gets the lock. Within one
process the lock is re-entrant (a trainer rebuilt in the same process, as tests and notebooks do), counted
so the last release unlocks. POSIX only; elsewhere it is a no-op."""

from __future__ import annotations

import os
from pathlib import Path

from zaya_train.errors import ZayaTrainError

try:
    import fcntl
except ImportError:  # Windows: no flock
    fcntl = None  # type: ignore[assignment]

LOCK_NAME = ".lock"
_held: dict[Path, list[int]] = {}  # lock path -> [fd, holders in this process]


def acquire_run_dir(run_dir: Path) -> Path | None:
    """Lock `run_dir` for this process; a clear error when another process holds it. Returns the lock path."""
    if fcntl is None:
        return None
    path = (Path(run_dir) / LOCK_NAME).resolve()
    if path in _held:
        _held[path][1] += 1
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        owner = os.read(fd, 64).decode(errors="replace").strip() or "unknown"
        os.close(fd)
        raise ZayaTrainError(
            f"run dir {path.parent} is in use by another training process (pid {owner}, holding {path}); "
            "wait for it to end or stop it, or give this run another directory (hydra.run.dir=...)"
        ) from None
    os.ftruncate(fd, 0)
    os.write(fd, f"{os.getpid()}\n".encode())
    _held[path] = [fd, 1]
    return path


def release_run_dir(path: Path | None) -> None:
    """Undo one `acquire_run_dir`; the last one in this process unlocks (the lock file stays, harmless)."""
    if path is None or path not in _held:
        return
    _held[path][1] -= 1
    if _held[path][1] == 0:
        fd, _ = _held.pop(path)
        os.close(fd)  # closing the descriptor drops the flock
