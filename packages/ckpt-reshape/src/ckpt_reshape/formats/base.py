"""What every format provides: a reader that serves logical tensors one at a time, and a writer that takes
them one at a time and stores the pieces a target layout asks for.

Readers never modify their source (files are opened read-only). Writers write into a fresh folder (or
file) that `zaya_config.atomic.atomic_output` renames into place only after `finish()`.
"""

from __future__ import annotations

import json
import os
from abc import ABC, abstractmethod
from pathlib import Path
from typing import TYPE_CHECKING

from zaya_config.atomic import fsync_path

from ckpt_reshape.byte_ranges import Extent, Target
from ckpt_reshape.errors import ReshapeError
from ckpt_reshape.index import CheckpointIndex
from ckpt_reshape.layout import ParallelLayout
from ckpt_reshape.pieces import Piece

if TYPE_CHECKING:
    import torch

    from ckpt_reshape.row_blocks import RowReader, RowWriter

SIDECAR_NAME = "ckpt-reshape.json"
SIDECAR_FORMAT = "ckpt-reshape/1"


class CheckpointReader(ABC):
    """A checkpoint opened for reading; `index` lists its logical tensors and objects."""

    format_name: str = "?"

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.index = CheckpointIndex()
        self.sidecar: dict | None = None

    @abstractmethod
    def read_tensor(self, name: str) -> torch.Tensor:
        """The whole logical tensor `name`, assembled from however many pieces store it."""

    def read_object(self, name: str) -> bytes:
        """The `torch.save` bytes of a non-tensor entry."""
        raise KeyError(name)

    def byte_extents(self, name: str) -> list[Extent] | None:
        """Where the row-major bytes of tensor `name` lie, in logical order; None when they are not stored so."""
        return None

    def row_reader(self, name: str) -> RowReader | None:
        """Reads blocks of dim-0 rows of tensor `name` without the rest of it (see `row_blocks`); None when
        this checkpoint cannot (then `read_tensor` is used)."""
        from ckpt_reshape.row_blocks import extent_row_reader

        meta = self.index.require(name, str(self.path))
        extents = self.byte_extents(name) if meta.shape else None
        return None if extents is None else extent_row_reader(meta, extents)

    def data_files(self) -> list[Path]:
        """Every file that belongs to the checkpoint (for size reports and checksums)."""
        if self.path.is_file():
            return [self.path]
        return sorted(p for p in self.path.rglob("*") if p.is_file())

    def not_carried(self, index: CheckpointIndex) -> list[str]:
        """Entries of another checkpoint's `index` that this checkpoint's format cannot hold (absent here by design)."""
        return []

    def split_table(self):
        """The split table this checkpoint's own names call for (Megatron's), or None for the default one."""
        return None

    def needs_model_only(self) -> str | None:
        """Why this checkpoint converts only with `--model-only` (entries it holds but cannot convert), or None."""
        return None

    def extra_files(self) -> dict[str, Path]:
        """Files carried verbatim by a DCP-to-DCP conversion (e.g. zaya-train's per-rank train state)."""
        return {}

    def close(self) -> None:  # noqa: B027  (readers without open files need nothing here)
        """Release open files."""

    def __enter__(self) -> CheckpointReader:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class CheckpointWriter(ABC):
    """Writes one checkpoint into `target` (a fresh folder, or a file path for single-file formats)."""

    format_name: str = "?"
    single_file: bool = False
    model_only: bool = False  # formats that hold weights only (HF) drop optimizer and trainer entries
    durable: bool = True  # fsync every file in finish(); `convert(durable=False)` clears it (as fast as `cp`)
    light: bool = False  # torch-free (`convert`'s first try; only the DCP writer has such a path)

    def __init__(self, target: Path, index: CheckpointIndex, pieces: dict[str, list[Piece]], layout: ParallelLayout):
        self.target = Path(target)
        self.index = index
        self.pieces = pieces
        self.layout = layout

    @abstractmethod
    def write_tensor(self, name: str, tensor: torch.Tensor) -> None:
        """Store the pieces of logical tensor `name` (called once per tensor, in index order)."""

    def write_object(self, name: str, payload: bytes) -> None:  # noqa: B027  (HF holds no objects)
        """Store a non-tensor entry given as `torch.save` bytes."""

    def can_stream(self, name: str) -> bool:
        """Whether every stored part of tensor `name` is one row-major run of its logical bytes."""
        return False

    def stream_targets(self, name: str) -> list[Target]:
        """Reserve tensor `name`'s storage and say where its logical bytes go (only when `can_stream`)."""
        raise NotImplementedError(f"{self.format_name} writer does not stream")

    def can_write_rows(self, name: str) -> bool:
        """Whether tensor `name` can be stored a block of dim-0 rows at a time (see `row_blocks`)."""
        return False

    def row_writer(self, name: str) -> RowWriter:
        """Reserve tensor `name`'s storage and return what stores its rows block by block (when `can_write_rows`)."""
        raise NotImplementedError(f"{self.format_name} writer does not write row blocks")

    def row_granule(self, name: str) -> int:
        """Blocks of rows are a multiple of this many rows (e.g. a zarr chunk's rows, so no chunk is written twice)."""
        return 1

    @abstractmethod
    def finish(self, sidecar: dict) -> None:
        """Write metadata (including the sidecar: layout and checksums), fsync every file (when `durable`)."""

    def fsync(self, fd: int) -> None:
        """Force a file written by this writer to disk, unless the conversion was asked not to."""
        if self.durable:
            os.fsync(fd)

    def fsync_path(self, path: Path) -> None:
        """`fsync_path`, unless the conversion was asked not to."""
        if self.durable:
            fsync_path(path)


def write_bytes_file(path: Path, data: bytes, durable: bool = True) -> None:
    """Write a file of a checkpoint being built (fsynced when `durable`); the whole folder is published
    atomically later, so the file itself needs no temporary name."""
    with open(path, "wb") as stream:
        stream.write(data)
        stream.flush()
        if durable:
            os.fsync(stream.fileno())


def write_text_file(path: Path, text: str, durable: bool = True) -> None:
    """Write a metadata file of a checkpoint being built (fsynced when `durable`)."""
    write_bytes_file(path, text.encode("utf-8"), durable)


def write_sidecar(folder: Path, sidecar: dict, durable: bool = True) -> None:
    """Write the layout-and-checksums file next to a folder checkpoint's data (fsynced when `durable`)."""
    write_text_file(folder / SIDECAR_NAME, json.dumps(sidecar, indent=1), durable)


def read_sidecar(folder: Path) -> dict | None:
    """The sidecar of a folder checkpoint this package wrote, None for checkpoints from elsewhere."""
    path = folder / SIDECAR_NAME
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except ValueError as err:
        raise ReshapeError(f"{path}: unreadable sidecar ({err}); delete it or restore it from the source") from err
    if data.get("format") != SIDECAR_FORMAT:
        raise ReshapeError(f"{path}: sidecar format {data.get('format')!r}, expected {SIDECAR_FORMAT!r}")
    return data


def layout_from_sidecar(sidecar: dict | None) -> ParallelLayout | None:
    """The layout recorded in a sidecar, if any."""
    if sidecar and sidecar.get("layout"):
        return ParallelLayout.from_dict(sidecar["layout"])
    return None
