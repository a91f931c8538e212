"""Where a run's numbers go: `metrics.jsonl` in the run dir (one JSON object per record, flushed as
written so a killed run keeps what it logged) and, optionally, TensorBoard scalars.
"""

import json
import math
from pathlib import Path
from typing import Any


def _plain(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None if math.isnan(value) else (1e308 if value > 0 else -1e308)
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


class MetricsWriter:
    """Appends records to `metrics.jsonl` (rank 0 only) and mirrors scalars to TensorBoard when enabled."""

    def __init__(self, run_dir: Path, enabled: bool = True, tensorboard: bool = False) -> None:
        self.path = Path(run_dir) / "metrics.jsonl"
        self.enabled = enabled
        self._file = None
        self._tb = None
        if enabled:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._file = open(self.path, "a", buffering=1)  # noqa: SIM115 - lives as long as the run
            if tensorboard:
                from torch.utils.tensorboard import SummaryWriter

                self._tb = SummaryWriter(log_dir=str(Path(run_dir) / "tensorboard"))

    def write(self, record: dict[str, Any]) -> None:
        """One record: `kind` (train|val|phase|sample|...), `step`, and its values."""
        if not self.enabled:
            return
        self._file.write(json.dumps(_plain(record)) + "\n")
        if self._tb is not None:
            prefix = record.get("kind", "train")
            for key, value in record.items():
                if isinstance(value, int | float) and key != "step":
                    self._tb.add_scalar(f"{prefix}/{key}", value, record.get("step", 0))

    def close(self) -> None:
        """Flush and close the files."""
        if self._file is not None:
            self._file.close()
            self._file = None
        if self._tb is not None:
            self._tb.close()
            self._tb = None


def read_metrics(path: Path) -> list[dict[str, Any]]:
    """Every record of a metrics.jsonl (a torn last line from a killed run is ignored)."""
    records = []
    for line in Path(path).read_text().splitlines():
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return records


def run_history(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The run as it continued: a resume from step s (a `phase` record with `resumed`) drops the records an
    earlier attempt wrote past s, the work the resume redid. metrics.jsonl itself keeps every line (append-only:
    nothing a killed attempt logged is deleted); plots and summaries read this view."""
    history: list[dict[str, Any]] = []
    for record in records:
        if record.get("kind") == "phase" and record.get("resumed"):
            history = [r for r in history if r.get("step", 0) <= record["step"]]
        history.append(record)
    return history
