"""Hydra callback: after a characterize multirun, merge every job's collectives into one table and plot."""

import logging
from pathlib import Path
from typing import Any

from hydra.experimental.callback import Callback
from omegaconf import DictConfig

log = logging.getLogger(__name__)


class MergeCollectivesCallback(Callback):
    """`on_multirun_end`: <sweep dir>/merged/collectives.csv + .zarr + plots, rows tagged with their job."""

    def __init__(self, link_peak_gbps: float | None = None) -> None:
        self.link_peak_gbps = link_peak_gbps

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        """Merge when at least one job wrote collectives; a sweep without them is left alone."""
        from collbench.plots import plot_busbw
        from collbench.results_io import CSV_NAME, merge_multirun

        sweep_dir = Path(config.hydra.sweep.dir)
        if not any(sweep_dir.rglob(CSV_NAME)):
            return
        rows = merge_multirun(sweep_dir)
        plot_busbw(rows, sweep_dir / "merged" / "plots", self.link_peak_gbps)
        log.info("merged %d collective rows into %s", len(rows), sweep_dir / "merged")
