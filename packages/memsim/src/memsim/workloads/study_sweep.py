"""After a multirun: one table and one plot comparing every job's memstudy.json (e.g. one per standard).

`SweepSummaryCallback` is a Hydra callback (`hydra.callbacks`); Hydra calls it when the sweep ends, so
`-m memsim=hbm3_16gb_pc,ddr5_16gb_x8_4800` leaves `memstudy_sweep.{json,csv,png}` in the sweep folder.
"""

import json
from pathlib import Path
from typing import Any

from hydra.experimental.callback import Callback
from omegaconf import DictConfig
from zaya_config.atomic import write_text_atomic

from memsim.workloads.study_report import plot_roofline_bars, write_csv


def summarize_sweep(sweep_dir: Path, plots: bool = True) -> list[dict[str, Any]]:
    """Rows of every job's results under `sweep_dir` (job folder added), written beside them; [] if none."""
    sweep_dir = Path(sweep_dir)
    rows = []
    for path in sorted(sweep_dir.glob("*/memstudy.json")):
        for result in json.loads(path.read_text())["results"]:
            rows.append({"job": path.parent.name, **result})
    if not rows:
        return rows
    write_text_atomic(sweep_dir / "memstudy_sweep.json", json.dumps(rows, indent=1))
    write_csv(sweep_dir / "memstudy_sweep.csv", rows)
    if plots:
        labels = [f"{r['standard']}\n{r['phase']} B={r['batch_size']}" for r in rows]
        plot_roofline_bars(rows, labels, sweep_dir / "memstudy_sweep.png", "memory study sweep: simulated vs roofline")
    return rows


class SweepSummaryCallback(Callback):
    """Hydra callback: summarize the sweep's memstudy.json files when the multirun ends."""

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        rows = summarize_sweep(Path(config.hydra.sweep.dir))
        if rows:
            print(f"sweep summary: {Path(config.hydra.sweep.dir) / 'memstudy_sweep.csv'} ({len(rows)} rows)")
