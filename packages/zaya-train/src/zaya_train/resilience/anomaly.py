"""AnomalyGuard: non-finite loss or grad norm, or a loss spike, -> skip, roll back, or stop.

A spike is a loss above mean + k*std of the last `window` accepted losses (after `min_history` of
them), as in the loss-spike handling of PaLM and Megatron's rerun machine. The verdict must be the same
on every rank, so feed it globally reduced values (the logged loss, the clipped global grad norm). Its
state (window, counters) is part of the training state, so a resumed run decides exactly as the
uninterrupted one would.
"""

import math
from collections import deque
from typing import Any

from zaya_train.errors import ZayaTrainError
from zaya_train.resilience.config import AnomalyConfig
from zaya_train.resilience.decision import Decision
from zaya_train.resilience.events import EventLog

AnomalyAction = Decision  # the guard's verdicts are decisions: ACCEPT, SKIP or ROLLBACK (never STOP)


class AnomalyLimitError(ZayaTrainError):
    """Anomalies kept coming beyond the configured bounds; the message says which bound and the history."""


class AnomalyGuard:
    """Judges each step's loss and grad norm; bounded skips and rollbacks; every verdict goes to events.jsonl."""

    def __init__(self, cfg: AnomalyConfig, events: EventLog | None = None) -> None:
        self.cfg = cfg
        self.events = events
        self.losses: deque[float] = deque(maxlen=cfg.window)
        self.consecutive = 0
        self.rollbacks = 0
        self.skips = 0

    def reason(self, loss: float, grad_norm: float | None) -> str | None:
        """Why this step is anomalous, None when it is fine."""
        if not math.isfinite(loss):
            return f"non-finite loss {loss}"
        if grad_norm is not None and not math.isfinite(grad_norm):
            return f"non-finite grad norm {grad_norm}"
        if len(self.losses) >= self.cfg.min_history:
            mean = sum(self.losses) / len(self.losses)
            std = math.sqrt(sum((x - mean) ** 2 for x in self.losses) / len(self.losses))
            limit = mean + self.cfg.k_std * std
            if loss > limit:
                return f"loss spike {loss:.4g} > mean {mean:.4g} + {self.cfg.k_std:g} * std {std:.3g} = {limit:.4g}"
        return None

    def check(self, step: int, loss: float, grad_norm: float | None = None) -> Decision:
        """The verdict for `step`; raises AnomalyLimitError when the bounds are exceeded."""
        why = self.reason(loss, grad_norm)
        if why is None:
            self.losses.append(loss)
            self.consecutive = 0
            return Decision.ACCEPT
        self.consecutive += 1
        action = Decision.ROLLBACK if self.cfg.policy == "rollback" else Decision.SKIP
        event = {"reason": why, "loss": loss, "grad_norm": grad_norm, "consecutive": self.consecutive}
        if self.cfg.policy == "raise":
            self._stop(step, why, event, "policy is 'raise'")
        if self.consecutive > self.cfg.max_consecutive_skips:
            self._stop(step, why, event, f"{self.consecutive} anomalous steps in a row > max_consecutive_skips")
        if action is Decision.ROLLBACK:
            if self.rollbacks >= self.cfg.max_rollbacks:
                self._stop(step, why, event, f"{self.rollbacks} rollbacks already = max_rollbacks")
            self.rollbacks += 1
        else:
            self.skips += 1
        if self.events is not None:
            self.events.emit(f"anomaly_{action.value}", step=step, **event)
        return action

    def _stop(self, step: int, why: str, event: dict[str, Any], bound: str) -> None:
        if self.events is not None:
            self.events.emit("anomaly_stop", step=step, bound=bound, **event)
        raise AnomalyLimitError(
            f"training stopped at step {step}: {why}; {bound} (skips so far {self.skips}, rollbacks "
            f"{self.rollbacks}). Inspect events.jsonl; raise train.resilience.anomaly bounds or lower the LR."
        )

    def state_dict(self) -> dict[str, Any]:
        """Window and counters, for the checkpoint's train state."""
        return {
            "losses": list(self.losses),
            "consecutive": self.consecutive,
            "rollbacks": self.rollbacks,
            "skips": self.skips,
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore what `state_dict` returned."""
        self.losses = deque(state["losses"], maxlen=self.cfg.window)
        self.consecutive = state["consecutive"]
        self.rollbacks = state["rollbacks"]
        self.skips = state["skips"]
