"""ResilienceHook: wires ResilienceRuntime into `zaya_train.Trainer` through its hook points.

The Trainer calls `before_step` / `after_step` / `on_end` like any hook, plus two calls inside
`train_step`: `poison_loss` (the `nan` fault) and `judge` (before `optimizer.step`, so a NaN or spiking
batch never touches the weights). Errors that must end the process with a distinct code (crash loop,
anomaly bounds) are turned into SystemExit here, after logging why: this hook is the process's policy.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch
from zaya_config.train_checkpoint.layout import step_dir_name

from zaya_train.resilience.anomaly import AnomalyAction, AnomalyLimitError
from zaya_train.resilience.config import FaultsConfig, ResilienceConfig
from zaya_train.resilience.crash_loop import CrashLoopError
from zaya_train.resilience.runtime import ResilienceRuntime, exit_code_for

if TYPE_CHECKING:
    from zaya_train.trainer import Trainer

log = logging.getLogger("zaya_train")


def _exit_for(err: Exception) -> SystemExit:
    log.error("%s", err)
    sys.stderr.write(f"zaya-train: {err}\n")
    sys.stderr.flush()
    return SystemExit(exit_code_for(err))


class ResilienceHook:
    """One per Trainer; `Trainer.__init__` creates it from `train.resilience` and `train.faults`."""

    def __init__(self, trainer: Trainer) -> None:
        cfg = trainer.cfg
        resilience = getattr(cfg, "resilience", None) or ResilienceConfig()
        faults = getattr(cfg, "faults", None) or FaultsConfig()
        self.runtime = ResilienceRuntime(resilience, faults, trainer.run_dir, trainer.ctx.rank)
        self._corrupts = any(spec.kind == "corrupt_checkpoint" for spec in faults.injections)
        self._started = False
        self._resumed_at: int | None = None

    # ------------------------------------------------------------ inside train_step
    def poison_loss(self, step: int, loss: torch.Tensor) -> torch.Tensor:
        """The loss of `step`, NaN when a `nan` fault is due."""
        return self.runtime.poison_loss(step, loss)

    def judge(self, step: int, loss: float, grad_norm: float | None) -> str:
        """'accept', 'skip' or 'rollback' for `step` (identical on all ranks); exits past the bounds."""
        try:
            return self.runtime.judge(step, loss, grad_norm).value
        except AnomalyLimitError as err:
            raise _exit_for(err) from err

    # ------------------------------------------------------------ hook points
    def resumed(self, step: int) -> None:
        """The Trainer loaded a checkpoint of `step` (called from `Trainer.resume`)."""
        self._resumed_at = step

    def before_step(self, trainer: Trainer) -> None:
        """First call: crash-loop check, SIGTERM handler, watchdog. Every call: progress record, faults."""
        step = trainer.progress.step + 1
        if not self._started:
            self._started = True
            try:
                self.runtime.start(self._resumed_at)
            except CrashLoopError as err:
                raise _exit_for(err) from err
        self.runtime.before_step(step)

    def after_step(self, trainer: Trainer, metrics: dict[str, Any]) -> None:
        """Rollback when judged so; heartbeat; fault after a save; preemption save-and-exit."""
        step = trainer.progress.step
        if metrics.get("anomaly") == AnomalyAction.ROLLBACK.value:
            self._roll_back(trainer, bad_step=step + 1)
        self.runtime.step_done(step)
        if trainer.checkpoints is not None and trainer._last_saved_step == step and "anomaly" not in metrics:
            if self._corrupts:
                trainer.checkpoints.wait()
            self.runtime.after_save(step, trainer.checkpoints.root / step_dir_name(step))
        if self.runtime.should_stop():
            saved = trainer.checkpoints is not None
            if saved:
                trainer.save_checkpoint()
                trainer.checkpoints.wait()
            self.runtime.preempt_exit(step, saved=saved)

    def on_end(self, trainer: Trainer, summary: dict[str, Any]) -> None:
        """A completed run: stop the watchdog, close the attempt record."""
        self.runtime.finish("completed")

    def close(self) -> None:
        """Called by `Trainer.close()`: no watchdog or signal handler outlives the trainer."""
        self.runtime.close()

    # ------------------------------------------------------------ state
    def state_dict(self) -> dict[str, Any]:
        """Part of the Trainer's train state (the anomaly window and counters)."""
        return self.runtime.state_dict()

    def load_state_dict(self, state: dict[str, Any] | None) -> None:
        """Restore from a checkpoint's train state (absent in checkpoints written without this hook)."""
        if state is not None:
            self.runtime.load_state_dict(state, keep_counters=self._started)

    def _roll_back(self, trainer: Trainer, bad_step: int) -> None:
        """Reload the last checkpoint, then jump the sampler past the data that led to the anomaly."""
        position, phase = trainer.sampler.state_dict(), trainer.progress.phase
        events = self.runtime.events
        if trainer.checkpoints is None:
            events.emit("rollback_unavailable", step=bad_step, reason="checkpoints are disabled; batch skipped")
            return
        trainer.checkpoints.wait()
        if not trainer.resume():
            events.emit("rollback_unavailable", step=bad_step, reason="no checkpoint yet; batch skipped")
            return
        skipped = trainer.progress.phase == phase
        if skipped:  # the windows drawn between the checkpoint and the bad batch are not trained on again
            trainer.sampler.load_state_dict(position)
        events.emit("rollback", step=bad_step, to_step=trainer.progress.step, data_window_skipped=skipped,
                    checkpoint=str(Path(trainer.checkpoints.root) / step_dir_name(trainer.progress.step)))  # fmt: skip
