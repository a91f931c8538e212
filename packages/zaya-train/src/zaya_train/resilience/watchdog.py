"""HangWatchdog: a per-rank heartbeat; no beat for T seconds dumps every stack and exits with a distinct code.

A hung collective (one rank died, a NIC flapped) blocks forever with no error; exiting lets torchrun or
Slurm restart the group. The first step gets a longer T: it compiles, prepares data and sets up NCCL.
A C-level `faulthandler` timer backs up the Python thread in case the GIL is never released.
"""

import faulthandler
import os
import threading
import time
from pathlib import Path

from zaya_train.resilience.events import EventLog
from zaya_train.resilience.exit_codes import ExitCode
from zaya_train.resilience.stacks import dump_all_stacks

_BACKSTOP_MARGIN_S = 30.0


class HangWatchdog:
    """Call `beat(step)` after each step; the watchdog thread kills the process when beats stop."""

    def __init__(
        self,
        timeout_s: float,
        first_step_timeout_s: float,
        dump_dir: Path,
        rank: int = 0,
        events: EventLog | None = None,
        poll_s: float = 1.0,
    ) -> None:
        self.timeout_s = timeout_s
        self.first_step_timeout_s = max(first_step_timeout_s, timeout_s)
        self.dump_path = Path(dump_dir) / f"hang-rank{rank:05d}.txt"
        self.events = events
        self.poll_s = min(poll_s, timeout_s / 4)
        self._last_beat = time.monotonic()
        self._last_step: int | None = None
        self._beats = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="zaya-hang-watchdog", daemon=True)

    def start(self) -> "HangWatchdog":
        """Start watching; the clock for the first step starts now."""
        self._last_beat = time.monotonic()
        self._arm_backstop(self.first_step_timeout_s)
        self._thread.start()
        return self

    def beat(self, step: int | None = None) -> None:
        """Progress was made (a step finished, a save completed)."""
        self._last_beat = time.monotonic()
        self._last_step = step
        self._beats += 1
        self._arm_backstop(self.timeout_s)

    def stop(self) -> None:
        """Stop watching (end of training, or before a long phase with no steps)."""
        self._stop.set()
        faulthandler.cancel_dump_traceback_later()
        if self._thread.is_alive() and threading.current_thread() is not self._thread:
            self._thread.join(timeout=self.poll_s * 4)

    def _arm_backstop(self, timeout_s: float) -> None:
        faulthandler.dump_traceback_later(timeout_s + _BACKSTOP_MARGIN_S, exit=True)

    def _deadline_s(self) -> float:
        return self.first_step_timeout_s if self._beats == 0 else self.timeout_s

    def _watch(self) -> None:
        while not self._stop.wait(self.poll_s):
            idle_s = time.monotonic() - self._last_beat
            if idle_s > self._deadline_s():
                self._fire(idle_s)

    def _fire(self, idle_s: float) -> None:
        dump_all_stacks(self.dump_path)
        if self.events is not None:
            self.events.emit(
                "hang",
                step=self._last_step,
                idle_s=round(idle_s, 1),
                stacks=str(self.dump_path),
                exit_code=int(ExitCode.HANG),
            )
        os._exit(ExitCode.HANG)
