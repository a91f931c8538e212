"""FaultInjector: the config's crash / NaN / hang / SIGTERM / SIGKILL / corrupt-checkpoint faults, for real.

Faults act on the real process (an exception, a signal to itself, a sleep that never returns, bytes
flipped in a real shard), so what survives them in tests survives them in production. A `once` fault
writes a marker file before it fires, so the restarted process passes that step; without `once` it
fires on every attempt (that is how a crash loop is made).
"""

import os
import random
import signal
import time
from pathlib import Path

from zaya_config.atomic import write_text_atomic

from zaya_train.errors import ZayaTrainError
from zaya_train.resilience.config import FaultsConfig, FaultSpec
from zaya_train.resilience.events import EventLog


class InjectedCrash(ZayaTrainError):
    """A `crash` fault: raised in the training loop like any bug would be."""


class FaultInjector:
    """Hooks the loop calls: `before_step`, `poison_loss`, `after_save`."""

    def __init__(self, cfg: FaultsConfig, marker_dir: Path, rank: int = 0, events: EventLog | None = None) -> None:
        self.cfg = cfg
        self.marker_dir = Path(marker_dir)
        self.rank = rank
        self.events = events

    def _due(self, index: int, spec: FaultSpec, step: int) -> bool:
        if spec.rank is not None and spec.rank != self.rank:
            return False
        if spec.at_step is not None:
            hit = spec.at_step == step
        else:
            hit = random.Random(f"{self.cfg.seed}:{index}:{step}").random() < spec.probability
        if not hit:
            return False
        if spec.once:
            marker = self.marker_dir / f"fault{index:02d}-{spec.kind}-step{step:08d}-rank{self.rank:05d}.fired"
            if marker.exists():
                return False
            self.marker_dir.mkdir(parents=True, exist_ok=True)
            write_text_atomic(marker, f"{time.time()}\n")
        if self.events is not None:
            self.events.emit("fault_injected", step=step, fault=spec.kind, index=index)
        return True

    def _firing(self, kinds: tuple[str, ...], step: int) -> list[FaultSpec]:
        return [s for i, s in enumerate(self.cfg.injections) if s.kind in kinds and self._due(i, s, step)]

    def before_step(self, step: int) -> None:
        """Crash, hang, SIGTERM or SIGKILL this process when a fault is due at `step`."""
        for spec in self._firing(("crash", "hang", "sigterm", "sigkill"), step):
            if spec.kind == "crash":
                raise InjectedCrash(f"injected crash at step {step} on rank {self.rank} (train.faults)")
            if spec.kind == "sigterm":
                os.kill(os.getpid(), signal.SIGTERM)
            elif spec.kind == "sigkill":
                os.kill(os.getpid(), signal.SIGKILL)
            elif spec.kind == "hang":
                while True:  # a stuck kernel or collective: only the watchdog gets us out
                    time.sleep(3600)

    def poison_loss(self, step: int) -> bool:
        """True when the loop should turn this step's loss into NaN (a `nan` fault)."""
        return bool(self._firing(("nan",), step))

    def after_save(self, step: int, folder: Path) -> None:
        """Corrupt the just-saved, committed checkpoint (flip a byte in its largest file) when due; rank 0 only."""
        if self.rank != 0 or not self._firing(("corrupt_checkpoint",), step):
            return
        victim = max((p for p in Path(folder).rglob("*") if p.is_file() and p.name != "manifest.json"),
                     key=lambda p: p.stat().st_size)  # fmt: skip
        with open(victim, "r+b") as stream:
            stream.seek(victim.stat().st_size // 2)
            byte = stream.read(1)
            stream.seek(-1, os.SEEK_CUR)
            stream.write(bytes([byte[0] ^ 0xFF]))
        if self.events is not None:
            self.events.emit("checkpoint_corrupted", step=step, file=str(victim))
