"""Resilience: every fault-tolerance part, built once and passed to the Trainer; it decides, the Trainer acts.

    resilience = Resilience(cfg.resilience, cfg.faults, run_dir, rank, device=ctx.device)
    trainer = Trainer(..., resilience=resilience)     # build_trainer does this

It is a `TrainerHook` (`before_step`: crash-loop check, signal handler, watchdog, faults;
`on_checkpoint_saved`: heartbeat, event, the `corrupt_checkpoint` fault; `on_end`) and answers the Trainer at
its own points: `poison_loss` (the `nan` fault) and `judge` inside `train_step` (before `optimizer.step`, so a
NaN or spiking batch never touches the weights: a `Decision`), then after each step `heartbeat` and `decide`
(STOP on a preemption). What a decision needs done (reload the last checkpoint, move the sampler, save before
stopping) the Trainer does; it reports back (`rolled_back`, `rollback_unavailable`, `resumed`, `stop`) so the
events are written here. Errors that must end the process with a distinct code (crash loop, anomaly bounds)
become SystemExit here, after logging why: this object is the process's policy. `exit_code_for(err)` maps
those errors to their exit codes. Its per-step all-reduces (the verdict, the preemption flag) run on the
training device (`device`), over the default group: NCCL's serves CUDA tensors only.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch
import torch.distributed as dist

from zaya_train.hooks import TrainerHook
from zaya_train.resilience.anomaly import AnomalyGuard, AnomalyLimitError
from zaya_train.resilience.config import FaultsConfig, ResilienceConfig
from zaya_train.resilience.crash_loop import CrashLoopDetector, CrashLoopError
from zaya_train.resilience.decision import Decision
from zaya_train.resilience.events import EventLog
from zaya_train.resilience.exit_codes import ExitCode
from zaya_train.resilience.faults import FaultInjector
from zaya_train.resilience.preemption import PreemptionHandler
from zaya_train.resilience.watchdog import HangWatchdog

if TYPE_CHECKING:
    from zaya_train.trainer import Trainer

log = logging.getLogger("zaya_train")
_ACTION_ORDER = (Decision.ACCEPT, Decision.SKIP, Decision.ROLLBACK)  # by severity


def exit_code_for(err: BaseException) -> int:
    """The distinct process exit code for a fault-tolerance error (1 for anything else)."""
    if isinstance(err, CrashLoopError):
        return ExitCode.CRASH_LOOP
    if isinstance(err, AnomalyLimitError):
        return ExitCode.ANOMALY_LIMIT
    return 1


def _exit_for(err: Exception) -> SystemExit:
    log.error("%s", err)
    sys.stderr.write(f"zaya-train: {err}\n")
    sys.stderr.flush()
    return SystemExit(exit_code_for(err))


class Resilience(TrainerHook):
    """Owns the event log, preemption handler, watchdog, anomaly guard, crash-loop detector and faults."""

    def __init__(
        self,
        cfg: ResilienceConfig | None = None,
        faults: FaultsConfig | None = None,
        run_dir: Path = Path("."),
        rank: int = 0,
        device: torch.device | str = "cpu",
    ) -> None:
        self.cfg = cfg = cfg or ResilienceConfig()
        self.device = torch.device(device)  # the training device: where the per-step all-reduces run
        faults = faults or FaultsConfig()
        self.run_dir = Path(run_dir)
        self.rank = rank
        self.events = EventLog(self.run_dir, rank)
        dumps = self.run_dir / "stacks"
        self.preemption = PreemptionHandler(
            cfg.preemption.grace_s, dumps, rank, self.events, cfg.preemption.exit_code, device=self.device
        )
        wd = cfg.watchdog
        self.watchdog = HangWatchdog(wd.timeout_s, wd.first_step_timeout_s, dumps, rank, self.events, wd.poll_s)
        self.anomaly = AnomalyGuard(cfg.anomaly, self.events)
        self.crash_loop = CrashLoopDetector(self.run_dir, cfg.crash_loop.max_same_step_failures, rank, self.events)
        self.faults = FaultInjector(faults, self.run_dir / "faults", rank, self.events)
        self._corrupts = any(spec.kind == "corrupt_checkpoint" for spec in faults.injections)
        self._distributed = dist.is_available() and dist.is_initialized()
        self._started = False
        self._resumed_at: int | None = None

    # ------------------------------------------------------------ inside train_step
    def poison_loss(self, step: int, loss: torch.Tensor) -> torch.Tensor:
        """The loss, turned to NaN when a `nan` fault is due (so backward sees NaN grads, as in a real blow-up)."""
        return loss * float("nan") if self.faults.poison_loss(step) else loss

    def judge(self, step: int, loss: float, grad_norm: float | None = None) -> Decision:
        """ACCEPT, SKIP or ROLLBACK for `step`, identical on every rank (the most severe verdict wins); exits
        past the anomaly bounds."""
        try:
            action = self.anomaly.check(step, loss, grad_norm)
        except AnomalyLimitError as err:
            raise _exit_for(err) from err
        if self._distributed:
            code = torch.tensor([_ACTION_ORDER.index(action)], dtype=torch.int32, device=self.device)
            dist.all_reduce(code, op=dist.ReduceOp.MAX)
            action = _ACTION_ORDER[int(code.item())]
        return action

    # ------------------------------------------------------------ hook events
    def resumed(self, step: int) -> None:
        """The Trainer loaded a checkpoint of `step`."""
        self._resumed_at = step

    def before_step(self, trainer: Trainer) -> None:
        """First call: crash-loop check, SIGTERM handler, watchdog. Every call: progress record, faults."""
        step = trainer.progress.step + 1
        if not self._started:
            self._started = True
            try:
                if self.cfg.crash_loop.enabled:
                    self.crash_loop.start(self._resumed_at)
            except CrashLoopError as err:
                raise _exit_for(err) from err
            if self.cfg.preemption.enabled:
                self.preemption.install()
            if self.cfg.watchdog.enabled:
                self.watchdog.start()
        self.crash_loop.step_started(step)
        self.faults.before_step(step)

    def on_checkpoint_saved(self, trainer: Trainer, step: int, folder: Path) -> None:
        """A checkpoint was committed (never while it is still `.tmp.step_N`): heartbeat, the `checkpoint_saved`
        event, then any `corrupt_checkpoint` fault."""
        self.watchdog.beat(step)
        if self.rank == 0:
            self.events.emit("checkpoint_saved", step=step, folder=str(folder))
        self.faults.after_save(step, folder)

    def on_end(self, trainer: Trainer, summary: dict[str, Any]) -> None:
        """A completed run: stop the watchdog, close the attempt record."""
        self._finish("completed")

    # ------------------------------------------------------------ after a step: decide, then record
    @property
    def needs_committed_saves(self) -> bool:
        """Whether each save must be committed before the next step (a `corrupt_checkpoint` fault corrupts the
        folder of the step just saved, so that folder must exist first)."""
        return self._corrupts

    def heartbeat(self, step: int) -> None:
        """Step `step` finished: the watchdog's heartbeat."""
        self.watchdog.beat(step)

    def decide(self, step: int) -> Decision:
        """STOP when a preemption was requested (every rank agrees at this step boundary), else ACCEPT."""
        if self.cfg.preemption.enabled and self.preemption.should_stop():
            return Decision.STOP
        return Decision.ACCEPT

    def stop(self, step: int, saved: bool) -> None:
        """The Trainer has saved (when it could) after a STOP: finish the attempt and exit the process."""
        self._finish("preempted")
        self.preemption.exit(step, saved)

    def rolled_back(self, bad_step: int, to_step: int, data_window_skipped: bool, checkpoint: Path) -> None:
        """The Trainer reloaded the checkpoint of `to_step` after the anomaly at `bad_step`."""
        self.events.emit("rollback", step=bad_step, to_step=to_step, data_window_skipped=data_window_skipped,
                         checkpoint=str(checkpoint))  # fmt: skip

    def rollback_unavailable(self, bad_step: int, reason: str) -> None:
        """The Trainer could not roll back (`reason`); the batch was skipped instead."""
        self.events.emit("rollback_unavailable", step=bad_step, reason=reason)

    def close(self) -> None:
        """Stop the watchdog and restore signal handlers without marking the attempt done (idempotent).

        A run that ended by an exception must not leave a watchdog that later kills the process (a notebook,
        a test worker) or a SIGTERM handler that swallows the next SIGTERM."""
        self.watchdog.stop()
        self.preemption.uninstall()

    # ------------------------------------------------------------ state
    def state_dict(self) -> dict[str, Any]:
        """What must survive a restart for identical decisions (the anomaly window and counters)."""
        return {"anomaly": self.anomaly.state_dict()}

    def load_state_dict(self, state: dict[str, Any] | None) -> None:
        """Restore from a checkpoint's train state; after a rollback (training already started) keep the live
        counters so retries stay bounded. Checkpoints written without this part carry None."""
        if state is None:
            return
        if self._started:
            live = self.anomaly.state_dict()
            self.anomaly.load_state_dict({**state["anomaly"], **{k: v for k, v in live.items() if k != "losses"}})
        else:
            self.anomaly.load_state_dict(state["anomaly"])

    # ------------------------------------------------------------ internals
    def _finish(self, reason: str) -> None:
        """Training ended cleanly: stop the watchdog, restore signal handlers, mark the attempt done."""
        self.close()
        self.crash_loop.finish(reason)
        if self.rank == 0 and reason == "completed":
            self.events.emit("completed")
