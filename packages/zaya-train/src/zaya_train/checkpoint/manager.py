"""CheckpointManager: atomic, verified, optionally asynchronous torch.distributed.checkpoint saves.

Why each step of a save exists (`zaya_config.train_checkpoint.layout` names the folders, its `manifest`
the integrity file; ckpt-reshape reads and rewrites the same root):
1. every rank writes its DCP shards and its plain training state into `.tmp.step_N/` (fsynced);
2. rank 0 hashes every file into `manifest.json`, renames the folder to `step_N/` and fsyncs the root;
3. only then does `latest` move to `step_N` (atomic replace), so a SIGKILL at any moment leaves either
   the previous checkpoint or the new one as `latest`, never a half-written one;
4. older folders beyond `keep_last` and leftovers of killed saves are removed.
`load_latest` walks back from `latest`, verifying each manifest, and warns naming the bad file when it
has to skip one.

The manager is handed the Stateful parts it saves (`parts`: name -> an object with `state_dict()` and
`load_state_dict()`, as torchtitan's CheckpointManager is; `checkpoint/trainer_state.py` lists a training
run's) and knows nothing of what they belong to: `save(step)` writes their state dicts, `load_latest()` fills
their templates from the newest verified checkpoint and hands each part its own back. The part named `train`
is pickled per rank; the others go through DCP. `save(step, state)` / `load_latest(state)` take the state
dicts themselves instead. Checkpoint collectives run on their own gloo group so that an asynchronous save's
background thread never interleaves with the training loop's collectives. `root` must be on a file
system every rank sees (as DCP's FileSystemWriter assumes), since rank 0 hashes and renames all shards.
"""

from __future__ import annotations

import logging
import pickle
import shutil
import time
import warnings
from collections.abc import Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch.distributed as dist
import torch.distributed.checkpoint as dcp
from torch.distributed.checkpoint.stateful import Stateful
from zaya_config.atomic import durable_rename, fsync_path, write_bytes_atomic, write_text_atomic
from zaya_config.train_checkpoint.dcp_metadata import safe_reader
from zaya_config.train_checkpoint.layout import (
    LATEST_NAME,
    TMP_PREFIX,
    read_latest,
    step_dir_name,
    step_dirs,
    tmp_dir_name,
    train_state_name,
    write_latest,
)
from zaya_config.train_checkpoint.manifest import ManifestProblem, verify_manifest, write_manifest
from zaya_config.train_checkpoint.train_state import load_train_state

from zaya_train.checkpoint.errors import CheckpointError

log = logging.getLogger(__name__)
# DCP warns on every single-process save/load (also from the async upload thread, where no
# catch_warnings can reach); single-process is a supported mode here, not an accident.
warnings.filterwarnings("ignore", message="torch.distributed is disabled, unavailable or uninitialized")


TRAIN_KEY = "train"


class CorruptCheckpointWarning(UserWarning):
    """A checkpoint failed manifest verification and was skipped for an older one."""


@dataclass
class SaveTiming:
    """How long one save held the training loop (blocking) and how long until it was committed (total)."""

    step: int
    blocking_s: float
    total_s: float | None = None


class CheckpointManager:
    """Saves and restores named parts (or {"model", "optim", "train"} state dicts) under `root`, keeping the
    last N."""

    def __init__(
        self,
        root: Path,
        keep_last: int = 3,
        async_save: bool = False,
        parts: Mapping[str, Stateful] | None = None,
        layout: dict | None = None,
    ) -> None:
        """`layout`: the parallel layout each manifest records for ckpt-reshape (None: data parallel only)."""
        if keep_last < 1:
            raise CheckpointError(f"keep_last = {keep_last}; keep at least 1 checkpoint (set keep_last >= 1)")
        self.root = Path(root)
        self.parts: dict[str, Stateful] = dict(parts or {})
        self.layout = layout
        self.keep_last = keep_last
        self.async_save = async_save
        self.distributed = dist.is_available() and dist.is_initialized()
        self.rank = dist.get_rank() if self.distributed else 0
        self.world_size = dist.get_world_size() if self.distributed else 1
        self._group = dist.new_group(backend="gloo") if self.distributed else None
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ckpt") if async_save else None
        self._pending: Future | None = None
        # the steps whose saves are complete (committed, on rank 0), in order; an asynchronous save appends from
        # its thread, so a caller can tell "started" from "on disk" without waiting
        self.committed: list[int] = []
        self.timings: list[SaveTiming] = []
        self.skipped: list[ManifestProblem] = []
        if self.rank == 0:
            self.root.mkdir(parents=True, exist_ok=True)

    # ---------------------------------------------------------------- save
    def save(self, step: int, state: dict[str, Any] | None = None, files: dict[str, str] | None = None) -> Path:
        """Write a checkpoint of `state` (default: the parts' state dicts) for `step`; returns its final folder
        (committed once `wait()` returns)."""
        if state is None:
            state = {name: part.state_dict() for name, part in self.parts.items()}
        start = time.perf_counter()
        self.wait()
        tmp = self.root / tmp_dir_name(step)
        final = self.root / step_dir_name(step)
        if self.rank == 0:
            if tmp.exists():
                shutil.rmtree(tmp)
            tmp.mkdir(parents=True)
        self._barrier()
        write_bytes_atomic(tmp / train_state_name(self.rank), pickle.dumps(state.get(TRAIN_KEY, {}), protocol=5))
        if self.rank == 0:  # `files`: text records for the checkpoint's readers (trained_model.json), in the manifest
            for name, text in (files or {}).items():
                write_text_atomic(tmp / name, text)
        tensors = {k: v for k, v in state.items() if k != TRAIN_KEY}
        writer = dcp.FileSystemWriter(tmp, sync_files=True)
        timing = SaveTiming(step=step, blocking_s=0.0)
        self.timings.append(timing)
        if self._executor is not None:
            upload = dcp.async_save(
                tensors, storage_writer=writer, process_group=self._group, no_dist=not self.distributed
            )
            self._pending = self._executor.submit(self._finish_async, upload, step, tmp, start, timing)
            timing.blocking_s = time.perf_counter() - start
        else:
            dcp.save(tensors, storage_writer=writer, process_group=self._group, no_dist=not self.distributed)
            if self.rank == 0:
                self._commit(step, tmp)
            self._barrier()
            self.committed.append(step)
            timing.blocking_s = timing.total_s = time.perf_counter() - start
        return final

    def _finish_async(self, upload: Future, step: int, tmp: Path, start: float, timing: SaveTiming) -> None:
        upload.result()
        if self.rank == 0:
            self._commit(step, tmp)
        self.committed.append(step)
        timing.total_s = time.perf_counter() - start

    def _commit(self, step: int, tmp: Path) -> None:
        """Rank 0: manifest, rename, move `latest`, prune. Every shard is on disk once DCP's save returns."""
        write_manifest(tmp, step=step, world_size=self.world_size, layout=self.layout)
        fsync_path(tmp)
        final = self.root / step_dir_name(step)
        if final.exists():  # an uncommitted leftover of a killed run reaching the same step
            shutil.rmtree(final)
        durable_rename(tmp, final)
        write_latest(self.root, step)
        self._prune(step)

    def _prune(self, latest: int) -> None:
        dirs = step_dirs(self.root)
        committed = sorted(s for s in dirs if s <= latest)
        doomed = [dirs[s] for s in committed[: -self.keep_last]] + [dirs[s] for s in dirs if s > latest]
        doomed += [p for p in self.root.iterdir() if p.name.startswith(TMP_PREFIX) and p.is_dir()]
        for path in doomed:
            shutil.rmtree(path, ignore_errors=True)

    def wait(self) -> None:
        """Block until an asynchronous save is committed on rank 0 and written on every rank."""
        if self._pending is None:
            return
        pending, self._pending = self._pending, None
        try:
            pending.result()
        except Exception as err:
            raise CheckpointError(f"asynchronous checkpoint save under {self.root} failed: {err}") from err
        self._barrier()

    def _barrier(self) -> None:
        if self.distributed:
            dist.barrier(group=self._group)

    def close(self) -> None:
        """Finish any pending save and stop the background thread."""
        self.wait()
        if self._executor is not None:
            self._executor.shutdown(wait=True)

    # ---------------------------------------------------------------- load
    def load_latest(self, state: dict[str, Any] | None = None) -> int | None:
        """Load the newest verified checkpoint; returns its step or None when none exists.

        Into `state` (in place): `state["train"]` is replaced by the saved dict of this rank (rank 0's when the
        world grew); the tensors in `state["model"]` / `state["optim"]` are filled in place by DCP. Without
        `state`, into the parts: their state dicts are the templates (built only once a checkpoint is found),
        and each part then gets its loaded state dict (`load_state_dict`), in the order the parts were given.
        """
        self.wait()
        choice = [self._choose_checkpoint() if self.rank == 0 else None]
        if self.distributed:
            dist.broadcast_object_list(choice, src=0, group=self._group)
        found = choice[0]
        if found is None:
            return None
        step, folder = found[0], Path(found[1])
        if state is not None:
            self._read(folder, state)
            return step
        state = {name: part.state_dict() for name, part in self.parts.items() if name != TRAIN_KEY}
        self._read(folder, state)
        for name, part in self.parts.items():
            part.load_state_dict(state[name])
        return step

    def folder(self, step: int) -> Path:
        """Where the checkpoint of `step` is once committed."""
        return self.root / step_dir_name(step)

    def _read(self, folder: Path, state: dict[str, Any]) -> None:
        """This rank's train state and the DCP tensors of `folder` into `state`."""
        own = folder / train_state_name(self.rank)
        own = own if own.exists() else folder / train_state_name(0)
        state[TRAIN_KEY] = load_train_state(own)  # restricted: a checkpoint is data, never code
        tensors = {k: v for k, v in state.items() if k != TRAIN_KEY}
        if tensors:
            dcp.load(
                tensors,
                storage_reader=safe_reader(folder),
                process_group=self._group,
                no_dist=not self.distributed,
            )

    def latest_step(self) -> int | None:
        """Step of the newest checkpoint that passes verification (rank-local check, no collectives)."""
        found = self._choose_checkpoint()
        return None if found is None else found[0]

    def _choose_checkpoint(self) -> tuple[int, str] | None:
        dirs = step_dirs(self.root)
        latest = read_latest(self.root)
        if latest is None and dirs:
            log.warning("no readable %s pointer under %s; considering every step folder", LATEST_NAME, self.root)
        candidates = sorted((s for s in dirs if latest is None or s <= latest), reverse=True)
        for step in candidates:
            problem = verify_manifest(dirs[step])
            if problem is None:
                return step, str(dirs[step])
            self.skipped.append(problem)
            message = f"skipping checkpoint {dirs[step]}: {problem}; falling back to the previous one"
            log.warning(message)
            warnings.warn(message, CorruptCheckpointWarning, stacklevel=3)
        if latest is not None and candidates == []:
            log.warning("%s names step %d under %s but that folder is gone", LATEST_NAME, latest, self.root)
        return None
