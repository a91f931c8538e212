"""Structured configs of the fault-tolerance parts: `train.resilience` and `train.faults`.

Defaults protect a laptop run without getting in its way: SIGTERM saves and exits, the hang watchdog
waits generously, NaNs skip the batch, no faults are injected.
"""

from dataclasses import dataclass, field

from zaya_config.checks import non_negative, one_of, positive
from zaya_config.errors import invalid
from zaya_config.validated import ValidatedConfig

FAULT_KINDS = ("crash", "nan", "hang", "sigterm", "sigkill", "corrupt_checkpoint")
ANOMALY_POLICIES = ("skip", "rollback", "raise")


@dataclass
class PreemptionConfig(ValidatedConfig):
    """SIGTERM (Slurm's preemption notice): save at the next step boundary and exit within the grace time."""

    enabled: bool = True
    grace_s: float = 60.0  # after the signal, the process is gone within this many seconds, saved or not
    exit_code: int = 0  # clean exit after the save; the launcher (Slurm --requeue) brings the job back

    def validate_fields(self) -> None:
        """Grace time positive, exit code a byte."""
        positive("grace_s", self.grace_s)
        if not 0 <= self.exit_code <= 255:
            raise invalid("exit_code", self.exit_code, "an integer in [0, 255]")


@dataclass
class WatchdogConfig(ValidatedConfig):
    """Per-rank heartbeat: no step finished for `timeout_s` (longer before the first step) means a hang."""

    enabled: bool = True
    timeout_s: float = 600.0
    first_step_timeout_s: float = 1800.0  # compilation, data preparation, first all-reduce
    poll_s: float = 1.0

    def validate_fields(self) -> None:
        """Positive times; the first step may not have less time than the others."""
        positive("timeout_s", self.timeout_s)
        positive("poll_s", self.poll_s)
        if self.first_step_timeout_s < self.timeout_s:
            raise invalid(
                "first_step_timeout_s", self.first_step_timeout_s, f"a number >= timeout_s ({self.timeout_s})"
            )


@dataclass
class AnomalyConfig(ValidatedConfig):
    """Loss spikes and non-finite values: detection window and what to do about them."""

    policy: str = "skip"  # skip the batch | rollback to the last checkpoint and skip its data window | raise
    window: int = 50  # accepted losses the spike statistics are taken over
    k_std: float = 6.0  # spike: loss > mean + k_std * std of the window
    min_history: int = 20  # no spike detection before this many accepted steps
    max_consecutive_skips: int = 5  # more anomalous batches in a row than this stops the run
    max_rollbacks: int = 3  # more rollbacks than this in one run stops the run

    def validate_fields(self) -> None:
        """Known policy, positive window and bounds."""
        one_of("policy", self.policy, ANOMALY_POLICIES)
        positive("window", self.window)
        positive("k_std", self.k_std)
        positive("min_history", self.min_history)
        if self.min_history > self.window:
            raise invalid("min_history", self.min_history, f"an integer <= window ({self.window})")
        non_negative("max_consecutive_skips", self.max_consecutive_skips)
        non_negative("max_rollbacks", self.max_rollbacks)


@dataclass
class CrashLoopConfig(ValidatedConfig):
    """In-job restarts (torchrun --max-restarts): stop when the same step keeps failing."""

    enabled: bool = True
    max_same_step_failures: int = 3

    def validate_fields(self) -> None:
        """At least one failure before a loop is declared."""
        positive("max_same_step_failures", self.max_same_step_failures)


@dataclass
class ResilienceConfig(ValidatedConfig):
    """Everything that keeps a long run alive: preemption, hang watchdog, anomaly policy, crash loops."""

    preemption: PreemptionConfig = field(default_factory=PreemptionConfig)
    watchdog: WatchdogConfig = field(default_factory=WatchdogConfig)
    anomaly: AnomalyConfig = field(default_factory=AnomalyConfig)
    crash_loop: CrashLoopConfig = field(default_factory=CrashLoopConfig)

    def validate_fields(self) -> None:
        """Nothing of its own: each part checks itself (ValidatedConfig prefixes their keys)."""


@dataclass
class FaultSpec(ValidatedConfig):
    """One injected fault: what, when (a step, or each step with a probability), on which rank, how often."""

    kind: str = "crash"  # crash | nan | hang | sigterm | sigkill | corrupt_checkpoint
    at_step: int | None = None  # fire when this step starts (corrupt_checkpoint: after this step's save)
    probability: float = 0.0  # used when at_step is null: chance per step, seeded by FaultsConfig.seed
    rank: int | None = None  # null: every rank
    once: bool = True  # fire once per step across restarts (a marker file remembers); false: every time

    def validate_fields(self) -> None:
        """Known kind; a step or a probability; a valid rank."""
        one_of("kind", self.kind, FAULT_KINDS)
        if self.at_step is None and not 0.0 < self.probability <= 1.0:
            raise invalid("probability", self.probability, "a number in (0, 1] when at_step is null")
        if self.at_step is not None:
            positive("at_step", self.at_step)
        if self.rank is not None:
            non_negative("rank", self.rank)


@dataclass
class FaultsConfig(ValidatedConfig):
    """Fault injection for tests and soak runs; empty (no faults) by default."""

    seed: int = 0
    injections: list[FaultSpec] = field(default_factory=list)

    def validate_fields(self) -> None:
        """Nothing of its own: each injection checks itself (ValidatedConfig prefixes `injections[i]`)."""
