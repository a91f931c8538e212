"""ResilienceRuntime: the few hooks a training loop calls to get every fault-tolerance part at once.

    runtime = ResilienceRuntime(cfg.resilience, cfg.faults, run_dir, rank)
    runtime.start(resume_step)                 # crash-loop check, SIGTERM handler, watchdog
    for step in ...:
        runtime.before_step(step)              # records progress, fires injected faults
        loss = runtime.poison_loss(step, loss) # `nan` faults
        action = runtime.judge(step, loss, grad_norm)   # ACCEPT / SKIP / ROLLBACK, same on all ranks
        runtime.step_done(step)                # heartbeat
        if runtime.should_stop(): save; runtime.preempt_exit(step)
    runtime.finish("completed")

`exit_code_for(err)` maps the errors these parts raise to their distinct exit codes.
"""

from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist

from zaya_train.resilience.anomaly import AnomalyAction, AnomalyGuard, AnomalyLimitError
from zaya_train.resilience.config import FaultsConfig, ResilienceConfig
from zaya_train.resilience.crash_loop import CrashLoopDetector, CrashLoopError
from zaya_train.resilience.events import EventLog
from zaya_train.resilience.exit_codes import ExitCode
from zaya_train.resilience.faults import FaultInjector
from zaya_train.resilience.preemption import PreemptionHandler
from zaya_train.resilience.watchdog import HangWatchdog

_ACTION_ORDER = (AnomalyAction.ACCEPT, AnomalyAction.SKIP, AnomalyAction.ROLLBACK)


def exit_code_for(err: BaseException) -> int:
    """The distinct process exit code for a fault-tolerance error (1 for anything else)."""
    if isinstance(err, CrashLoopError):
        return ExitCode.CRASH_LOOP
    if isinstance(err, AnomalyLimitError):
        return ExitCode.ANOMALY_LIMIT
    return 1


class ResilienceRuntime:
    """Owns the event log, preemption handler, watchdog, anomaly guard, crash-loop detector and faults."""

    def __init__(self, cfg: ResilienceConfig, faults: FaultsConfig, run_dir: Path, rank: int = 0) -> None:
        self.cfg = cfg
        self.run_dir = Path(run_dir)
        self.rank = rank
        self.events = EventLog(self.run_dir, rank)
        dumps = self.run_dir / "stacks"
        self.preemption = PreemptionHandler(cfg.preemption.grace_s, dumps, rank, self.events, cfg.preemption.exit_code)
        wd = cfg.watchdog
        self.watchdog = HangWatchdog(wd.timeout_s, wd.first_step_timeout_s, dumps, rank, self.events, wd.poll_s)
        self.anomaly = AnomalyGuard(cfg.anomaly, self.events)
        self.crash_loop = CrashLoopDetector(self.run_dir, cfg.crash_loop.max_same_step_failures, rank, self.events)
        self.faults = FaultInjector(faults, self.run_dir / "faults", rank, self.events)
        self._distributed = dist.is_available() and dist.is_initialized()

    def start(self, resume_step: int | None) -> None:
        """Before the first step: refuse to run a crash loop, install SIGTERM handling, start the heartbeat."""
        if self.cfg.crash_loop.enabled:
            self.crash_loop.start(resume_step)
        if self.cfg.preemption.enabled:
            self.preemption.install()
        if self.cfg.watchdog.enabled:
            self.watchdog.start()

    def before_step(self, step: int) -> None:
        """Record the step in progress (crash-loop evidence), then fire any fault due at it."""
        self.crash_loop.step_started(step)
        self.faults.before_step(step)

    def poison_loss(self, step: int, loss: torch.Tensor) -> torch.Tensor:
        """The loss, turned to NaN when a `nan` fault is due (so backward sees NaN grads, as in a real blow-up)."""
        return loss * float("nan") if self.faults.poison_loss(step) else loss

    def judge(self, step: int, loss: float, grad_norm: float | None = None) -> AnomalyAction:
        """The anomaly verdict, made identical on every rank (the most severe one wins)."""
        action = self.anomaly.check(step, loss, grad_norm)
        if self._distributed:
            code = torch.tensor([_ACTION_ORDER.index(action)], dtype=torch.int32)
            dist.all_reduce(code, op=dist.ReduceOp.MAX)
            action = _ACTION_ORDER[int(code.item())]
        return action

    def step_done(self, step: int) -> None:
        """Heartbeat after a step (or any other long unit of progress, such as a save)."""
        self.watchdog.beat(step)

    def after_save(self, step: int, folder: Path) -> None:
        """A checkpoint was committed: heartbeat, then any `corrupt_checkpoint` fault."""
        self.watchdog.beat(step)
        if self.rank == 0:
            self.events.emit("checkpoint_saved", step=step, folder=str(folder))
        self.faults.after_save(step, folder)

    def should_stop(self) -> bool:
        """A stop signal reached any rank: save now and call `preempt_exit`."""
        return self.cfg.preemption.enabled and self.preemption.should_stop()

    def preempt_exit(self, step: int, saved: bool = True) -> None:
        """End this attempt cleanly after a preemption save (raises SystemExit with the configured code)."""
        self.finish("preempted")
        self.preemption.exit(step, saved)

    def finish(self, reason: str = "completed") -> None:
        """Training ended cleanly: stop the watchdog, restore signal handlers, mark the attempt done."""
        self.close()
        self.crash_loop.finish(reason)
        if self.rank == 0 and reason == "completed":
            self.events.emit("completed")

    def close(self) -> None:
        """Stop the watchdog and restore signal handlers without marking the attempt done (idempotent).

        A run that ended by an exception must not leave a watchdog that later kills the process
        (a notebook, a test worker) or a SIGTERM handler that swallows the next SIGTERM.
        """
        self.watchdog.stop()
        self.preemption.uninstall()

    def state_dict(self) -> dict[str, Any]:
        """What must survive a restart for identical decisions (the anomaly window and counters)."""
        return {"anomaly": self.anomaly.state_dict()}

    def load_state_dict(self, state: dict[str, Any], keep_counters: bool = False) -> None:
        """Restore from a checkpoint; after a rollback keep the live counters so retries stay bounded."""
        if keep_counters:
            live = self.anomaly.state_dict()
            self.anomaly.load_state_dict({**state["anomaly"], **{k: v for k, v in live.items() if k != "losses"}})
        else:
            self.anomaly.load_state_dict(state["anomaly"])
