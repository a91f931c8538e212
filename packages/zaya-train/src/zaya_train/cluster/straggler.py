"""StragglerDetector: per-rank forward times, all-gathered at logging steps; a rank above k x the median for m
windows in a row is named in events.jsonl with its node, and (action=stop) the run saves and exits 77.

Why the forward pass: under DDP every rank leaves a step together (the gradient all-reduce waits for the
slowest), so whole-step times are equal on every rank and hide the straggler; the forward has no collective
under DDP, so its time is the rank's own speed. Under FSDP2 the forward holds the parameter all-gathers and
the measure is blunter (it still shows a rank whose compute is slow between them).
nvidia-resiliency-ext's straggler Detector does this on CUDA (kernel times from CUPTI); this one runs
anywhere, gloo on CPU included (infra/README.md says why that library is not used here).
"""

from __future__ import annotations

import logging
import statistics
import sys
import time
from typing import TYPE_CHECKING, Any

import torch
import torch.distributed as dist

from zaya_train.cluster.config import StragglerConfig
from zaya_train.distributed.setup import node_name
from zaya_train.errors import ZayaTrainError
from zaya_train.hooks import TrainerHook
from zaya_train.resilience.events import EventLog
from zaya_train.resilience.exit_codes import ExitCode

if TYPE_CHECKING:
    from zaya_train.trainer import Trainer

log = logging.getLogger("zaya_train")


def stragglers(times: list[float], k: float) -> list[int]:
    """The ranks whose time is above k x the median of all ranks' times."""
    median = statistics.median(times)
    return [rank for rank, t in enumerate(times) if median > 0 and t > k * median]


class StragglerDetector(TrainerHook):
    """Times the model's forward on this rank; compares ranks at every logging step."""

    def __init__(self, cfg: StragglerConfig, model: torch.nn.Module, rank: int, world_size: int,
                 device: torch.device, events: EventLog) -> None:  # fmt: skip
        if cfg.test_sleep_rank is not None and cfg.test_sleep_rank >= world_size:
            raise ZayaTrainError(f"train.cluster.straggler.test_sleep_rank = {cfg.test_sleep_rank}; allowed: a rank "
                                 f"< the world size ({world_size})")  # fmt: skip
        self.cfg, self.rank, self.world_size, self.device, self.events = cfg, rank, world_size, device, events
        self._sleep = cfg.test_sleep_s if cfg.test_sleep_rank == rank else 0.0
        self._started = 0.0
        self._forward_s, self._steps = 0.0, 0
        self._streak = [0] * world_size
        self._nodes: list[str] | None = None
        model.register_forward_pre_hook(self._forward_starts)
        model.register_forward_hook(self._forward_ends)

    def _forward_starts(self, module: torch.nn.Module, args: Any) -> None:
        self._started = time.perf_counter()
        if self._sleep:
            time.sleep(self._sleep)  # test only (train.cluster.straggler.test_sleep_s): a slow rank

    def _forward_ends(self, module: torch.nn.Module, args: Any, output: Any) -> None:
        self._forward_s += time.perf_counter() - self._started

    def after_optimizer_step(self, trainer: Trainer, metrics: dict[str, Any]) -> None:
        """One more step in this window."""
        self._steps += 1

    def after_step(self, trainer: Trainer, metrics: dict[str, Any]) -> None:
        """On logging steps: gather every rank's mean forward time, update the streaks, act on a straggler."""
        step = trainer.progress.step
        if self._steps == 0 or step % trainer.log_every != 0:
            return
        times = self._gather(self._forward_s / self._steps)
        self._forward_s, self._steps = 0.0, 0
        slow = set(stragglers(times, self.cfg.k))
        self._streak = [n + 1 if r in slow else 0 for r, n in enumerate(self._streak)]
        found = [r for r, n in enumerate(self._streak) if n >= self.cfg.m]
        if not found:
            return
        nodes = self._node_names()
        median_ms = statistics.median(times) * 1e3
        for rank in found:
            if self.rank == 0:
                self.events.emit("straggler", step=step, straggler_rank=rank, node=nodes[rank],
                                 forward_ms=round(times[rank] * 1e3, 3), median_ms=round(median_ms, 3),
                                 k=self.cfg.k, windows=self._streak[rank], action=self.cfg.action)  # fmt: skip
            log.warning("straggler: rank %d on node %s forward %.1f ms, median %.1f ms, %d windows",
                        rank, nodes[rank], times[rank] * 1e3, median_ms, self._streak[rank])  # fmt: skip
        if self.cfg.action == "stop":
            self._save_and_exit(trainer, step, [nodes[r] for r in found])
        self._streak = [0 if r in found else n for r, n in enumerate(self._streak)]

    def _gather(self, seconds: float) -> list[float]:
        if self.world_size == 1 or not dist.is_initialized():
            return [seconds]
        mine = torch.tensor([seconds], dtype=torch.float64, device=self.device)
        out = [torch.zeros_like(mine) for _ in range(self.world_size)]
        dist.all_gather(out, mine)
        return [float(t.item()) for t in out]

    def _node_names(self) -> list[str]:
        if self._nodes is None:
            self._nodes = [node_name()] * self.world_size
            if self.world_size > 1 and dist.is_initialized():
                dist.all_gather_object(self._nodes, node_name())
        return self._nodes

    def _save_and_exit(self, trainer: Trainer, step: int, nodes: list[str]) -> None:
        """Every rank saw the same gathered times, so every rank saves and exits here together."""
        if trainer.checkpoints is not None:
            trainer.save_checkpoint()
            trainer.checkpoints.wait()
        sys.stderr.write(f"zaya-train: straggler on node(s) {', '.join(nodes)} at step {step}; saved and "
                         f"stopping (exit {int(ExitCode.STRAGGLER)}) so the job is resubmitted without it\n")  # fmt: skip
        sys.stderr.flush()
        raise SystemExit(int(ExitCode.STRAGGLER))
