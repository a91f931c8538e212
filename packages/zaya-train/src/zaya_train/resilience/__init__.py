"""Fault tolerance for zaya-train: preemption, hang watchdog, loss-spike/NaN policy, crash loops, fault injection.

Each part is usable alone; `Resilience` bundles them: it decides (a `Decision`) and records, the Trainer acts
(the builder creates it and passes it in).

The names load on first use: the config schema imports `zaya_train.resilience.config` in every `zaya`
process, and that should not import torch.distributed.
"""

from importlib import import_module
from typing import TYPE_CHECKING, Any

_EXPORTS = {
    "AnomalyAction": "zaya_train.resilience.anomaly",
    "AnomalyGuard": "zaya_train.resilience.anomaly",
    "AnomalyLimitError": "zaya_train.resilience.anomaly",
    "AnomalyConfig": "zaya_train.resilience.config",
    "CrashLoopConfig": "zaya_train.resilience.config",
    "FaultsConfig": "zaya_train.resilience.config",
    "FaultSpec": "zaya_train.resilience.config",
    "PreemptionConfig": "zaya_train.resilience.config",
    "ResilienceConfig": "zaya_train.resilience.config",
    "WatchdogConfig": "zaya_train.resilience.config",
    "CrashLoopDetector": "zaya_train.resilience.crash_loop",
    "CrashLoopError": "zaya_train.resilience.crash_loop",
    "Decision": "zaya_train.resilience.decision",
    "EventLog": "zaya_train.resilience.events",
    "read_events": "zaya_train.resilience.events",
    "ExitCode": "zaya_train.resilience.exit_codes",
    "FaultInjector": "zaya_train.resilience.faults",
    "InjectedCrash": "zaya_train.resilience.faults",
    "PreemptionHandler": "zaya_train.resilience.preemption",
    "Resilience": "zaya_train.resilience.runtime",
    "exit_code_for": "zaya_train.resilience.runtime",
    "HangWatchdog": "zaya_train.resilience.watchdog",
}

__all__ = [
    "AnomalyAction",
    "AnomalyConfig",
    "AnomalyGuard",
    "AnomalyLimitError",
    "CrashLoopConfig",
    "CrashLoopDetector",
    "CrashLoopError",
    "Decision",
    "EventLog",
    "ExitCode",
    "FaultInjector",
    "FaultSpec",
    "FaultsConfig",
    "HangWatchdog",
    "InjectedCrash",
    "PreemptionConfig",
    "PreemptionHandler",
    "Resilience",
    "ResilienceConfig",
    "WatchdogConfig",
    "exit_code_for",
    "read_events",
]


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'zaya_train.resilience' has no attribute {name!r}")


if TYPE_CHECKING:
    from zaya_train.resilience.anomaly import AnomalyAction, AnomalyGuard, AnomalyLimitError
    from zaya_train.resilience.config import (
        AnomalyConfig,
        CrashLoopConfig,
        FaultsConfig,
        FaultSpec,
        PreemptionConfig,
        ResilienceConfig,
        WatchdogConfig,
    )
    from zaya_train.resilience.crash_loop import CrashLoopDetector, CrashLoopError
    from zaya_train.resilience.decision import Decision
    from zaya_train.resilience.events import EventLog, read_events
    from zaya_train.resilience.exit_codes import ExitCode
    from zaya_train.resilience.faults import FaultInjector, InjectedCrash
    from zaya_train.resilience.preemption import PreemptionHandler
    from zaya_train.resilience.runtime import Resilience, exit_code_for
    from zaya_train.resilience.watchdog import HangWatchdog
