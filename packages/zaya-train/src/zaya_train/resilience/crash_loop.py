"""CrashLoopDetector: under torchrun --max-restarts, stop when the same step keeps failing.

Each attempt (process start) leaves `attempts/attempt-NNNNNN.json` with the step it resumed from and
the step in progress, updated every step; a clean end (finished or preempted) marks it done. At start,
if the last `max_same_step_failures` attempts all failed while working on the same step, restarting
again cannot help (a bad batch, a broken node, a bug at that step): write `crash_loop.json` and stop
with a distinct exit code instead of burning the remaining restarts on the same failure.
"""

import json
import os
from pathlib import Path
from typing import Any

import torch.distributed as dist
from zaya_config.atomic import write_text_atomic

from zaya_train.errors import ZayaTrainError
from zaya_train.resilience.events import EventLog

REPORT_NAME = "crash_loop.json"


class CrashLoopError(ZayaTrainError):
    """The same step failed on several consecutive attempts; the message and crash_loop.json say which."""


class CrashLoopDetector:
    """Rank 0 records attempts; `start` decides (on rank 0, broadcast) whether this attempt may run."""

    def __init__(self, run_dir: Path, max_same_step_failures: int, rank: int = 0, events: EventLog | None = None):
        self.run_dir = Path(run_dir)
        self.folder = self.run_dir / "attempts"
        self.max_failures = max_same_step_failures
        self.rank = rank
        self.events = events
        self.record: dict[str, Any] | None = None
        self._path: Path | None = None

    def previous_attempts(self) -> list[dict[str, Any]]:
        """Every recorded attempt, oldest first (an unreadable record counts as a failure at step -1)."""
        attempts = []
        for path in sorted(self.folder.glob("attempt-*.json")) if self.folder.is_dir() else []:
            try:
                attempts.append(json.loads(path.read_text(encoding="utf-8")))
            except (OSError, json.JSONDecodeError):
                attempts.append({"attempt": path.stem, "finished": False, "current_step": -1})
        return attempts

    def _loop_report(self, attempts: list[dict[str, Any]]) -> dict[str, Any] | None:
        tail = attempts[-self.max_failures :]
        if len(tail) < self.max_failures or any(a.get("finished") for a in tail):
            return None
        steps = {a.get("current_step") for a in tail}
        if len(steps) != 1:
            return None
        return {"failing_step": steps.pop(), "failed_attempts": tail, "max_same_step_failures": self.max_failures}

    def start(self, resume_step: int | None) -> None:
        """Check for a crash loop (raises CrashLoopError) and record this attempt."""
        report = self._loop_report(self.previous_attempts()) if self.rank == 0 else None
        if dist.is_available() and dist.is_initialized():
            box = [report]
            dist.broadcast_object_list(box, src=0)
            report = box[0]
        if report is not None:
            self._stop(report)
        if self.rank != 0:
            return
        self.folder.mkdir(parents=True, exist_ok=True)
        index = len(list(self.folder.glob("attempt-*.json")))
        self._path = self.folder / f"attempt-{index:06d}.json"
        self.record = {
            "attempt": index,
            "restart_count": int(os.environ.get("TORCHELASTIC_RESTART_COUNT", "0")),
            "pid": os.getpid(),
            "resume_step": resume_step,
            "current_step": resume_step if resume_step is not None else 0,
            "finished": False,
        }
        self._write()
        if self.events is not None and index > 0:
            self.events.emit("restart", step=resume_step, attempt=index, restart_count=self.record["restart_count"])

    def step_started(self, step: int) -> None:
        """The loop began working on `step` (rank 0 records it)."""
        if self.record is not None:
            self.record["current_step"] = step
            self._write()

    def finish(self, reason: str) -> None:
        """This attempt ended cleanly (`completed`, `preempted`), which breaks any failure chain."""
        if self.record is not None:
            self.record.update(finished=True, end=reason)
            self._write()

    def _write(self) -> None:
        assert self._path is not None and self.record is not None
        write_text_atomic(self._path, json.dumps(self.record))

    def _stop(self, report: dict[str, Any]) -> None:
        step = report["failing_step"]
        if self.rank == 0:
            write_text_atomic(self.run_dir / REPORT_NAME, json.dumps(report, indent=1))
            if self.events is not None:
                self.events.emit("crash_loop", step=step, failed_attempts=len(report["failed_attempts"]))
        raise CrashLoopError(
            f"crash loop: the last {len(report['failed_attempts'])} attempts all failed at step {step}; "
            f"not restarting again. See {self.run_dir / REPORT_NAME} and the workers' logs; fix the cause "
            f"(or skip that data), then resume (delete {self.folder} to reset the count)."
        )
