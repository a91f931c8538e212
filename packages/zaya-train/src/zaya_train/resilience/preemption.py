"""PreemptionHandler: SIGTERM (Slurm's notice, torchrun's shutdown) -> save at the next step boundary, exit.

The signal handler only sets a flag and arms a timer: the loop decides at a step boundary, where the
state is consistent, and every rank agrees through an all-reduce so all of them save the same step. That
all-reduce runs on the training device (`device`): the default group under NCCL carries CUDA tensors only.
If the save cannot finish within the grace time the timer ends the process anyway (the cluster would
SIGKILL it a moment later), after dumping stacks so the slow part is visible.
"""

import os
import signal
import threading
import time
from pathlib import Path

import torch
import torch.distributed as dist

from zaya_train.resilience.events import EventLog
from zaya_train.resilience.exit_codes import ExitCode
from zaya_train.resilience.stacks import dump_all_stacks


class PreemptionHandler:
    """Install with `install()`; poll `should_stop()` once per step; call `exit()` after the save."""

    def __init__(
        self,
        grace_s: float,
        dump_dir: Path,
        rank: int = 0,
        events: EventLog | None = None,
        exit_code: int = 0,
        signals: tuple[int, ...] = (signal.SIGTERM,),
        device: torch.device | str = "cpu",
    ) -> None:
        self.grace_s = grace_s
        self.device = torch.device(device)
        self.dump_path = Path(dump_dir) / f"preempt-timeout-rank{rank:05d}.txt"
        self.events = events
        self.exit_code = exit_code
        self.signals = signals
        self.received_at: float | None = None
        self.signal_number: int | None = None
        self._timer: threading.Timer | None = None
        self._previous: dict[int, object] = {}

    def install(self) -> "PreemptionHandler":
        """Register the handler (main thread only, as Python requires)."""
        for signum in self.signals:
            self._previous[signum] = signal.signal(signum, self._on_signal)
        return self

    def uninstall(self) -> None:
        """Restore the previous handlers and cancel the grace timer."""
        for signum, previous in self._previous.items():
            signal.signal(signum, previous)  # type: ignore[arg-type]
        self._previous.clear()
        if self._timer is not None:
            self._timer.cancel()

    @property
    def requested(self) -> bool:
        """A stop signal arrived on this rank."""
        return self.received_at is not None

    def _on_signal(self, signum: int, _frame: object) -> None:
        if self.received_at is not None:
            return
        self.received_at = time.monotonic()
        self.signal_number = signum
        self._timer = threading.Timer(self.grace_s, self._grace_expired)
        self._timer.daemon = True
        self._timer.start()

    def should_stop(self, group: dist.ProcessGroup | None = None) -> bool:
        """True on every rank once any rank got the signal (one tiny all-reduce on `device` when distributed)."""
        flag = self.requested
        if dist.is_available() and dist.is_initialized():
            tensor = torch.tensor([1 if flag else 0], dtype=torch.int32, device=self.device)
            dist.all_reduce(tensor, op=dist.ReduceOp.MAX, group=group)
            flag = bool(tensor.item())
        return flag

    def seconds_left(self) -> float | None:
        """Grace time remaining since the signal, None before one arrived."""
        if self.received_at is None:
            return None
        return self.grace_s - (time.monotonic() - self.received_at)

    def exit(self, step: int, saved: bool) -> None:
        """Record the preemption and leave the process with the configured code (after a save)."""
        if self._timer is not None:
            self._timer.cancel()
        left = self.seconds_left()
        if self.events is not None:
            self.events.emit(
                "preempted", step=step, saved=saved, signal=self.signal_number,
                grace_left_s=None if left is None else round(left, 2),
            )  # fmt: skip
        raise SystemExit(self.exit_code)

    def _grace_expired(self) -> None:
        dump_all_stacks(self.dump_path)
        if self.events is not None:
            self.events.emit("preempt_timeout", grace_s=self.grace_s, exit_code=int(ExitCode.PREEMPT_TIMEOUT))
        os._exit(ExitCode.PREEMPT_TIMEOUT)
