"""Convert any checkpoint to any format and layout, one logical tensor at a time.

The pipeline: plan every target piece first (an impossible layout fails here, before a byte is written); then
each tensor moves the cheapest way both formats allow: as byte ranges copied file to file (`stream_copy`: cuts
along dim 0), else a block of rows at a time (`row_blocks`: TP cuts along other dims, zarr chunks of partial
rows), else whole. Whole tensors are read ahead of the writer by I/O threads under a byte budget (by default the
largest tensor's size, so at most about one extra tensor is ever held). Each tensor is hashed (in another
thread) while its pieces are written, and checked against the checksum the source recorded when ckpt-reshape
wrote it (damaged data stops the conversion); the output is published by an atomic rename. Peak memory is
therefore a copy block for streamed tensors and at most about twice the largest tensor otherwise.
"""

from __future__ import annotations

import shutil
import threading
from collections import deque
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from zaya_config.atomic import DestinationExists, atomic_output, fsync_path
from zaya_config.train_checkpoint.layout import LATEST_NAME, parse_step, train_state_files, write_latest
from zaya_config.train_checkpoint.manifest import find_manifest, write_manifest

from ckpt_reshape.checksums import DEFAULT_ALGORITHM, RecordedChecksums, bytes_checksum, tensor_checksum
from ckpt_reshape.errors import ReshapeError
from ckpt_reshape.formats import FORMATS, WRITERS, CheckpointReader, open_checkpoint
from ckpt_reshape.formats.base import SIDECAR_FORMAT, write_bytes_file
from ckpt_reshape.index import CheckpointIndex, dtype_name
from ckpt_reshape.layout import ParallelLayout
from ckpt_reshape.pieces import plan_layout
from ckpt_reshape.splits import SplitTable
from ckpt_reshape.stream_copy import Extent, StreamCopier
from ckpt_reshape.torch_names import NeedsTorch
from ckpt_reshape.train_state import reshape_train_states
from ckpt_reshape.zaya_names import default_split_table, key_map_for, model_config_for

if TYPE_CHECKING:
    import torch

    from ckpt_reshape.row_blocks import RowReader

_HEX_PLACEHOLDER = "0" * 64
# Above this many target pieces the torch path is faster: the torch-free `.metadata` goes through the
# pure-Python pickler (~0.15 ms a piece against torch's C pickler's ~0.01 ms), importing torch costs ~2 s.
LIGHT_MAX_PIECES = 10_000
LIGHT_TARGETS = ("dcp", "hf")  # formats whose writer has a torch-free path (from a DCP source)


@dataclass
class ConvertResult:
    """What a conversion wrote."""

    dst: Path
    fmt: str
    layout: ParallelLayout
    tensors: int
    objects: int
    bytes_written: int
    dropped: list[str] = field(default_factory=list)  # entries the target format cannot hold


class _ByteBudget:
    """Admits reads strictly in order, each when it fits the budget or nothing else is held.

    In order, because the writer consumes tensors in order: letting a later read take the budget while an
    earlier one waits would deadlock.
    """

    def __init__(self, budget_bytes: int) -> None:
        self.budget, self.held, self.aborted, self.next_ticket = budget_bytes, 0, False, 0
        self._cond = threading.Condition()

    def acquire(self, ticket: int, n: int) -> None:
        with self._cond:
            self._cond.wait_for(
                lambda: (
                    self.aborted or (ticket == self.next_ticket and (self.held == 0 or self.held + n <= self.budget))
                )
            )
            if self.aborted:
                raise ReshapeError("conversion aborted")
            self.held += n
            self.next_ticket += 1
            self._cond.notify_all()

    def abort(self) -> None:
        """Wake and fail every waiting reader (after an error, so the pool can shut down)."""
        with self._cond:
            self.aborted = True
            self._cond.notify_all()

    def release(self, n: int) -> None:
        with self._cond:
            self.held -= n
            self._cond.notify_all()


def _target_index(
    reader: CheckpointReader, model_only: bool, hf_config: dict | None
) -> tuple[CheckpointIndex, list[str]]:
    index = reader.index
    dropped: list[str] = []
    if model_only:
        full = index
        index = index.model_only()
        dropped = [k for k in [*full.tensors, *full.objects] if k not in index.tensors]
    if hf_config is not None:
        index.hf_config = hf_config
    return index, dropped


def _sidecar(fmt: str, index: CheckpointIndex, layout: ParallelLayout, table: SplitTable, src: Path) -> dict:
    return {
        "format": SIDECAR_FORMAT,
        "checkpoint_format": fmt,
        "layout": layout.to_dict(),
        "split_table": table.source,
        "checksum_algorithm": DEFAULT_ALGORITHM,
        "source": str(src),
        "hf_config": index.hf_config,
        "tensors": {
            name: {"shape": list(m.shape), "dtype": dtype_name(m.dtype), "checksum": _HEX_PLACEHOLDER}
            for name, m in index.tensors.items()
        },
        "objects": dict.fromkeys(index.objects, _HEX_PLACEHOLDER),
    }


def convert(
    src: Path,
    dst: Path,
    to: str,
    layout: ParallelLayout | None = None,
    *,
    model_only: bool = False,
    force: bool = False,
    table: SplitTable | None = None,
    hf_config: dict | None = None,
    io_threads: int = 2,
    memory_budget_bytes: int | None = None,
    progress: bool = False,
    writer_options: dict | None = None,
    model_config: str | dict | Path | None = None,
    durable: bool = True,
    torch_free: bool | None = None,
) -> ConvertResult:
    """Convert `src` (any format) into `dst` in format `to` with `layout` (default: the source's layout).

    `durable=False` skips the fsyncs (as `cp` does): the output still appears atomically, but may sit in the
    page cache for a while after this returns; see `zaya_config.atomic`.

    `torch_free`: by default (None) a DCP source going to DCP or HF is first converted without importing
    torch (metadata through `dcp_light`, chunk archives by `skeleton`, every tensor as byte ranges: the same
    bytes as with torch), and converted again with torch as soon as something needs it (a tensor whose bytes must
    be rearranged, a class `dcp_light` lacks), before anything is published. False: always with torch. True:
    without torch or not at all (`ReshapeError`).
    """
    if to not in FORMATS:
        raise ReshapeError(f"unknown target format {to!r}; choose one of {', '.join(FORMATS)}")
    src, dst = Path(src), Path(dst)
    _check_destination(dst, force, src)
    args = (src, dst, to, layout, model_only, force, table, hf_config, io_threads, memory_budget_bytes, progress)
    options = (writer_options, model_config, durable)
    if torch_free is not False:
        try:
            if to not in LIGHT_TARGETS:
                raise NeedsTorch(f"{to} targets are written with torch")
            return _convert(*args, *options, light=True)
        except NeedsTorch as why:
            if torch_free:
                raise ReshapeError(f"{src}: cannot convert to {to} without torch ({why})") from None
    return _convert(*args, *options, light=False)


def _convert(
    src, dst, to, layout, model_only, force, table, hf_config, io_threads, memory_budget_bytes, progress,
    writer_options, model_config, durable, light: bool,
) -> ConvertResult:  # fmt: skip
    """`convert` on torch's classes, or with `light` on the stand-ins (`NeedsTorch` where they do not do)."""
    writer_cls = WRITERS[to]
    with open_checkpoint(src, light=light) as reader:
        refusal = reader.needs_model_only()
        if refusal and not (model_only or writer_cls.model_only):
            raise ReshapeError(refusal)
        index, dropped = _target_index(reader, model_only or writer_cls.model_only, hf_config)
        cfg = model_config_for(index, src, model_config)
        if cfg is not None and index.hf_config is None:
            index.hf_config = cfg.to_hf_config()
        layout = layout or reader.index.layout or ParallelLayout()
        table = table or reader.split_table() or default_split_table(index, cfg)
        options = dict(writer_options or {})
        if to == "hf":
            options.setdefault("key_map", key_map_for(index, cfg))
        pieces = plan_layout(index, table, layout)  # raises before anything is written
        if light and sum(map(len, pieces.values())) > LIGHT_MAX_PIECES:
            raise NeedsTorch(
                f"{sum(map(len, pieces.values()))} pieces: torch's C pickler writes such a .metadata faster"
            )
        sidecar = _sidecar(to, index, layout, table, src)
        train_manifest = find_manifest(reader.path) if to == "dcp" and reader.format_name == "dcp" else None
        train_states = {}
        if train_manifest is not None:  # per-rank trainer state for the new world size, checked before writing
            train_states = reshape_train_states(reader.path, train_manifest.get("world_size"), layout.world_size)
        with _published(dst, force, durable) as out:
            tmp = out
            if train_manifest is not None and reader.path != src and (src / LATEST_NAME).is_file():
                # a zaya-train root in, a zaya-train root out: the step folder plus its `latest` pointer
                out.mkdir()
                tmp = out / reader.path.name
                write_latest(out, parse_step(reader.path.name), durable=durable)
            writer = writer_cls(tmp, index, pieces, layout, **options)
            writer.durable = durable
            writer.light = light
            if hasattr(writer, "reserve_sidecar"):
                writer.reserve_sidecar(sidecar)
            recorded = RecordedChecksums(reader.sidecar, reader.path)
            for name in index.objects:
                payload = reader.read_object(name)
                sidecar["objects"][name] = bytes_checksum(payload)
                recorded.check_object(name, sidecar["objects"][name])
                writer.write_object(name, payload)
            written = _stream_tensors(
                reader, writer, index, sidecar, recorded, io_threads, memory_budget_bytes, progress
            )
            if train_manifest is not None:
                _write_train_files(reader, tmp, train_states, durable)
            writer.finish(sidecar)
            if train_manifest is not None:
                split = (layout.ep, layout.tp, layout.pp) != (1, 1, 1)  # recorded: zaya-train's trainer cannot infer it
                write_manifest(tmp, int(train_manifest.get("step", 0)), layout.world_size, durable=durable,
                               layout=layout.to_dict() if split else None)  # fmt: skip
    dropped += getattr(writer, "dropped", [])
    return ConvertResult(dst, to, layout, len(index.tensors), len(index.objects), written, dropped)


def _check_destination(dst: Path, force: bool, src: Path) -> None:
    """Refuse to overwrite without `force`, and refuse to write over the source in any case."""
    if dst.resolve() == src.resolve():
        raise ReshapeError(f"{dst}: destination is the source; the source is never modified, pick another path")
    if dst.exists() and not force:
        raise ReshapeError(f"{dst}: already exists; pass --force to replace it")
    if not dst.parent.is_dir():
        raise ReshapeError(f"{dst.parent}: destination's parent folder does not exist")


@contextmanager
def _published(dst: Path, force: bool, durable: bool) -> Iterator[Path]:
    """`zaya_config.atomic.atomic_output`: the output appears whole under `dst` or not at all."""
    try:
        with atomic_output(dst, replace=force, durable=durable) as tmp:
            yield tmp
    except DestinationExists:
        raise ReshapeError(f"{dst}: appeared while converting; pass --force to replace it") from None


def _write_train_files(reader: CheckpointReader, folder: Path, train_states: dict[str, bytes], durable: bool) -> None:
    """zaya-train's per-rank train state for the new world, plus any other file the trainer left there."""
    old_states = {path.name for path in train_state_files(reader.path).values()}
    for rel, path in reader.extra_files().items():
        if rel not in old_states:
            (folder / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, folder / rel)
            if durable:
                fsync_path(folder / rel)
    for name, payload in train_states.items():
        write_bytes_file(folder / name, payload, durable)


def _stream_tensors(reader, writer, index, sidecar, recorded, io_threads, memory_budget_bytes, progress) -> int:
    """Every tensor in index order: byte ranges streamed where both sides allow it, else whole tensors."""
    names = list(index.tensors)
    budget = _ByteBudget(memory_budget_bytes or max(index.largest_tensor_bytes, 1))
    bar = _progress_bar(progress, index.total_bytes, f"{reader.format_name} -> {writer.format_name}")

    def load(ticket: int, name: str) -> tuple[list[Extent] | RowReader | torch.Tensor, int]:
        """The cheapest way to move tensor `name`: byte ranges, else row blocks, else the whole tensor."""
        source = reader.byte_extents(name) if writer.can_stream(name) else None
        if source is None and writer.light:
            raise NeedsTorch(f"tensor {name!r} is not moved as byte ranges")
        if source is None and writer.can_write_rows(name):
            source = reader.row_reader(name)
        held = 0 if source is not None else index.tensors[name].nbytes  # streams hold a block, not the tensor
        budget.acquire(ticket, held)
        return (source if source is not None else reader.read_tensor(name)), held

    copier = StreamCopier(writeback=writer.durable)
    pending: deque[tuple[str, Future]] = deque()
    written, next_i = 0, 0
    try:
        with (
            ThreadPoolExecutor(max(io_threads, 1), thread_name_prefix="ckpt-read") as pool,
            ThreadPoolExecutor(1, thread_name_prefix="ckpt-hash") as hasher,
        ):
            try:
                while next_i < len(names) or pending:
                    while next_i < len(names) and len(pending) < max(io_threads, 1) * 2:
                        pending.append((names[next_i], pool.submit(load, next_i, names[next_i])))
                        next_i += 1
                    name, future = pending.popleft()
                    payload, held = future.result()
                    try:
                        digest = _store(name, payload, reader, writer, index, copier, hasher)
                    finally:
                        del payload
                        budget.release(held)
                    recorded.check_tensor(name, digest)
                    sidecar["tensors"][name]["checksum"] = digest
                    written += index.tensors[name].nbytes
                    if bar is not None:
                        bar[0].update(bar[1], advance=index.tensors[name].nbytes)
            except BaseException:
                budget.abort()
                for _, future in pending:
                    future.cancel()
                raise
    finally:
        copier.close()
        if bar is not None:
            bar[0].stop()
    return written


def _store(name, payload, reader, writer, index, copier, hasher) -> str:
    """Write one tensor (byte extents, a row reader or a materialised tensor); returns the checksum of its
    logical bytes."""
    meta = index.tensors[name]
    if isinstance(payload, list):
        return copier.copy(meta, payload, writer.stream_targets(name))
    if callable(payload):
        from ckpt_reshape.row_blocks import copy_rows

        return copy_rows(meta, payload, writer.row_writer(name), hasher, writer.row_granule(name))
    if tuple(payload.shape) != meta.shape or payload.dtype != meta.dtype:
        raise ReshapeError(
            f"{reader.path}: tensor {name!r} reads as {list(payload.shape)} {payload.dtype}, its index "
            f"says {list(meta.shape)} {meta.dtype}; mismatched shape or dtype"
        )
    digest = hasher.submit(tensor_checksum, payload)
    writer.write_tensor(name, payload)
    return digest.result()


def _progress_bar(enabled: bool, total: int, label: str):
    if not enabled:
        return None
    from rich.progress import BarColumn, DownloadColumn, Progress, TimeRemainingColumn, TransferSpeedColumn

    bar = Progress(
        "[progress.description]{task.description}",
        BarColumn(),
        DownloadColumn(),
        TransferSpeedColumn(),
        TimeRemainingColumn(),
        transient=False,
    )
    bar.start()
    return bar, bar.add_task(label, total=total)
