"""Logging and progress settings shared by every service."""

from dataclasses import dataclass

from zaya_config.checks import one_of, positive
from zaya_config.validated import ValidatedConfig


@dataclass
class LoggingConfig(ValidatedConfig):
    """How a run reports: log level, progress bars, metric files, TensorBoard."""

    level: str = "INFO"
    progress: bool = True  # rich progress bars on long commands
    metrics_jsonl: bool = True
    tensorboard: bool = False
    log_every_steps: int = 10

    def validate_fields(self) -> None:
        """Level is a logging level; the cadence is positive."""
        one_of("level", self.level, ("DEBUG", "INFO", "WARNING", "ERROR"))
        positive("log_every_steps", self.log_every_steps)
