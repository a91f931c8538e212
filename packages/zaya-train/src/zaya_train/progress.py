"""The rich progress bar of a training run: tokens done of the recipe's budget, phase, loss, speed."""

from types import TracebackType
from typing import Any

from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn


class TrainingProgressBar:
    """A context manager; `update(progress, loss, phase_name)` after every step. Disabled: does nothing."""

    def __init__(self, total_tokens: int, max_steps: int | None = None, enabled: bool = True) -> None:
        self.enabled = enabled
        self.max_steps = max_steps
        self._bar = Progress(
            TextColumn("[bold]{task.fields[phase]}"),
            BarColumn(),
            TextColumn("{task.percentage:>5.1f}%  step {task.fields[step]}  loss {task.fields[loss]}"),
            TimeElapsedColumn(),
            TimeRemainingColumn(),
            disable=not enabled,
        )
        total = max_steps if max_steps is not None else total_tokens
        self._task = self._bar.add_task("train", total=total, phase="", step=0, loss="-")

    def __enter__(self) -> "TrainingProgressBar":
        self._bar.__enter__()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._bar.__exit__(exc_type, exc, tb)

    def update(self, progress: Any, loss: float | None = None, phase: str = "") -> None:
        """Move the bar to the run's current step/token count."""
        if not self.enabled:
            return
        done = progress.step if self.max_steps is not None else progress.tokens
        self._bar.update(
            self._task, completed=done, step=progress.step, phase=phase, loss=f"{loss:.4f}" if loss is not None else "-"
        )
