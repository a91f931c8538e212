"""Fault tolerance for zaya-train: preemption, hang watchdog, loss-spike/NaN policy, crash loops, fault injection.

Each part is usable alone; `Resilience` bundles them behind the hook points the Trainer calls (the builder
creates it and passes it in).
"""

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
from zaya_train.resilience.events import EventLog, read_events
from zaya_train.resilience.exit_codes import ExitCode
from zaya_train.resilience.faults import FaultInjector, InjectedCrash
from zaya_train.resilience.preemption import PreemptionHandler
from zaya_train.resilience.runtime import Resilience, exit_code_for
from zaya_train.resilience.watchdog import HangWatchdog

__all__ = [
    "AnomalyAction",
    "AnomalyConfig",
    "AnomalyGuard",
    "AnomalyLimitError",
    "CrashLoopConfig",
    "CrashLoopDetector",
    "CrashLoopError",
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
