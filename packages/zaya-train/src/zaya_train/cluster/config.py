"""`train.cluster`: what the training processes do for the cluster's fault tolerance (straggler detection).

The supervisor's own settings (retries, backoff, health bounds) are its command-line options
(`python -m zaya_train.cluster.supervise --help`); only what runs inside the Trainer is here.
"""

from dataclasses import dataclass, field

from zaya_config.checks import non_negative, one_of, positive
from zaya_config.errors import invalid
from zaya_config.validated import ValidatedConfig

STRAGGLER_ACTIONS = ("log", "stop")


@dataclass
class StragglerConfig(ValidatedConfig):
    """A rank whose forward time is above `k` x the median of all ranks for `m` logging windows in a row is a
    straggler: named in events.jsonl (`straggler`, with its node); `action=stop` also ends the run (exit 77)
    so the supervisor resubmits without that node."""

    enabled: bool = True
    k: float = 1.5  # slower than k x the median rank's forward time ...
    m: int = 3  # ... for m consecutive logging windows
    action: str = "log"  # log | stop
    # Test only: this rank sleeps `test_sleep_s` in every forward (a real, measured slowdown).
    test_sleep_s: float = 0.0
    test_sleep_rank: int | None = None

    def validate_fields(self) -> None:
        """k above 1, m at least one window, a known action; the test sleep names a rank."""
        if not self.k > 1.0:
            raise invalid("k", self.k, "a number > 1 (a straggler is k times slower than the median rank)")
        positive("m", self.m)
        one_of("action", self.action, STRAGGLER_ACTIONS)
        non_negative("test_sleep_s", self.test_sleep_s)
        if self.test_sleep_s > 0 and self.test_sleep_rank is None:
            raise invalid("test_sleep_rank", None, "a rank (an integer >= 0) when test_sleep_s > 0")
        if self.test_sleep_rank is not None:
            non_negative("test_sleep_rank", self.test_sleep_rank)


@dataclass
class ClusterConfig(ValidatedConfig):
    """The training side of cluster fault tolerance."""

    straggler: StragglerConfig = field(default_factory=StragglerConfig)

    def validate_fields(self) -> None:
        """Nothing of its own: each part checks itself."""
