"""Run observability: metrics.jsonl (+ TensorBoard), MFU, end-of-run plots."""

from zaya_train.metrics.mfu import mfu, peak_flops
from zaya_train.metrics.plots import plot_run
from zaya_train.metrics.step_timer import MEASURED_FIELDS, StepTimer
from zaya_train.metrics.writer import MetricsWriter, read_metrics, run_history

__all__ = [
    "MEASURED_FIELDS",
    "MetricsWriter",
    "StepTimer",
    "mfu",
    "peak_flops",
    "plot_run",
    "read_metrics",
    "run_history",
]
