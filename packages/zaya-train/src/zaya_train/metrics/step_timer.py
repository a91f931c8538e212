"""Where a step's time goes (forward+backward vs optimizer), read without making the GPU wait.

On CUDA the marks are events recorded on the stream; their times are read only when asked, which the trainer
does on logging steps, where it synchronises anyway. On CPU the marks are wall-clock times.
"""

import time

import torch

# Train-record fields measured on the machine (times, peak memory): they differ between two runs of the same
# config, so comparisons of runs (an exact resume against an uninterrupted run) leave them out.
MEASURED_FIELDS = frozenset({"tokens_per_s", "mfu", "optimizer_ms", "step_ms", "peak_gib"})


class StepTimer:
    """Named marks within one step; `ms(a, b)` is the time between two of them."""

    def __init__(self, device: torch.device) -> None:
        self.cuda = device.type == "cuda"
        self.marks: dict[str, object] = {}

    def mark(self, name: str) -> None:
        """Record a point in the step (an event on the current CUDA stream, or now)."""
        if self.cuda:
            event = torch.cuda.Event(enable_timing=True)
            event.record()
            self.marks[name] = event
        else:
            self.marks[name] = time.perf_counter()

    def ms(self, start: str, end: str) -> float:
        """Milliseconds from mark `start` to mark `end` (waits for `end` on CUDA)."""
        a, b = self.marks[start], self.marks[end]
        if self.cuda:
            b.synchronize()  # type: ignore[attr-defined]
            return float(a.elapsed_time(b))  # type: ignore[attr-defined]
        return (b - a) * 1e3  # type: ignore[operator]
