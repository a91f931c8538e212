"""zarr v3 groups: one uncompressed array per logical tensor under `tensors/`, chunked along the target
layout's split boundaries, objects as uint8 arrays under `objects/`.

numpy has no bfloat16 or float8, so every array stores its raw words in an unsigned integer of the same
width and carries the torch dtype in its `dtype` attribute: bf16 round trips bit for bit.
"""

from __future__ import annotations

import os
import sys
from math import gcd
from pathlib import Path

import numpy as np
import torch
from zaya_config.atomic import fsync_path

from ckpt_reshape.byte_ranges import Extent, Target
from ckpt_reshape.errors import ReshapeError
from ckpt_reshape.formats.base import CheckpointReader, CheckpointWriter, layout_from_sidecar
from ckpt_reshape.index import TensorMeta, dtype_from_name, dtype_name
from ckpt_reshape.open_files import OpenFiles
from ckpt_reshape.pieces import Piece
from ckpt_reshape.row_blocks import RowReader, RowWriter

MAX_CHUNK_BYTES = 64 << 20
SLAB_BYTES = 64 << 20  # what one zarr write call is given (a whole number of dim-0 chunks)
_WORD = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}
_TORCH_WORD = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}
_SIGNED = {1: np.uint8, 2: np.int16, 4: np.int32, 8: np.int64}  # torch.from_numpy lacks wide unsigned types


def _zarr():
    try:
        import zarr
    except ImportError as err:
        raise ReshapeError("the zarr format needs zarr>=3: pip install 'ckpt-reshape[zarr]'") from err
    return zarr


def is_zarr_folder(path: Path) -> bool:
    """A folder with a zarr v3 group document."""
    return path.is_dir() and (path / "zarr.json").is_file()


def _to_numpy(tensor: torch.Tensor) -> np.ndarray:
    """Raw words of a tensor as an unsigned numpy array of the same shape (no copy when contiguous)."""
    t = tensor.contiguous()
    words = t.reshape(-1).view(_TORCH_WORD[t.dtype.itemsize]).reshape(t.shape)
    return words.numpy().view(_WORD[t.dtype.itemsize])


def _from_numpy(array: np.ndarray, dtype: torch.dtype) -> torch.Tensor:
    """Inverse of `_to_numpy`."""
    words = np.ascontiguousarray(array).view(_SIGNED[dtype.itemsize])
    return torch.from_numpy(words).reshape(-1).view(dtype).reshape(array.shape)


def chunk_shape(meta: TensorMeta, pieces: list[Piece]) -> tuple[int, ...]:
    """A regular chunk grid aligned with every piece boundary, cut along dim 0 to stay <= MAX_CHUNK_BYTES."""
    if not meta.shape:
        return ()
    dims = []
    for d, size in enumerate(meta.shape):
        step = size
        for piece in pieces:
            for edge in (piece.offsets[d], piece.sizes[d]):
                if edge:
                    step = gcd(step, edge)
        dims.append(max(step, 1))
    row_bytes = meta.dtype.itemsize
    for s in dims[1:]:
        row_bytes *= s
    dims[0] = max(1, min(dims[0], MAX_CHUNK_BYTES // max(row_bytes, 1)))
    return tuple(dims)


def row_chunk_files(array, meta: TensorMeta) -> list[tuple[str, int, int]]:
    """`(path under tensors/, logical byte start, byte length)` of each chunk file of an array chunked in whole
    rows: uncompressed, each file holds one run of the tensor's bytes (the edge chunk padded past its length)."""
    rows, row_bytes = array.chunks[0], meta.nbytes // meta.shape[0]
    tail = (0,) * (len(meta.shape) - 1)
    files = []
    for i in range(-(-meta.shape[0] // rows)):
        key = array.metadata.encode_chunk_key((i, *tail))
        files.append((f"{meta.name}/{key}", i * rows * row_bytes, min(rows, meta.shape[0] - i * rows) * row_bytes))
    return files


class ZarrReader(CheckpointReader):
    """Reads a zarr v3 checkpoint written by `ZarrWriter`."""

    format_name = "zarr"

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        zarr = _zarr()
        try:
            self.root = zarr.open_group(store=str(self.path), mode="r")
            attrs = dict(self.root.attrs)
        except Exception as err:
            raise ReshapeError(f"{self.path}: cannot open as a zarr v3 group ({err})") from err
        self.sidecar = attrs.get("ckpt_reshape")
        if not self.sidecar:
            raise ReshapeError(
                f"{self.path}: zarr group without `ckpt_reshape` attributes; not written by ckpt-reshape"
            )
        self.index.layout = layout_from_sidecar(self.sidecar)
        self.index.hf_config = self.sidecar.get("hf_config")
        for name, entry in self.sidecar["tensors"].items():
            self.index.tensors[name] = TensorMeta(name, tuple(entry["shape"]), dtype_from_name(entry["dtype"], name))
        self.index.objects = list(self.sidecar.get("objects", {}))
        self.index.paths = {k: tuple(v) for k, v in self.sidecar.get("paths", {}).items()}
        self._files = OpenFiles(self.path)

    def _array(self, group: str, name: str):
        try:
            return self.root[f"{group}/{name}"]
        except KeyError:
            raise ReshapeError(f"{self.path / group / name}: array missing (incomplete zarr checkpoint)") from None

    def _checked_array(self, meta: TensorMeta):
        array = self._array("tensors", meta.name)
        if tuple(array.shape) != meta.shape or array.attrs.get("dtype") != dtype_name(meta.dtype):
            raise ReshapeError(
                f"{self.path / 'tensors' / meta.name}: array is {list(array.shape)} {array.attrs.get('dtype')}, "
                f"the index says {list(meta.shape)} {dtype_name(meta.dtype)}"
            )
        return array

    def read_tensor(self, name: str) -> torch.Tensor:
        meta = self.index.require(name, str(self.path))
        array = self._checked_array(meta)
        try:
            data = array[...]
        except Exception as err:
            raise ReshapeError(
                f"{self.path / 'tensors' / name}: chunk unreadable ({err}); truncated or corrupt"
            ) from err
        return _from_numpy(np.asarray(data), meta.dtype)

    def byte_extents(self, name: str) -> list[Extent] | None:
        """The chunk files of an array chunked in whole rows and stored raw (no codec but little-endian bytes):
        each is a run of the tensor's bytes, so conversions copy them file to file. None otherwise, or when a
        chunk file is absent (zarr reads it as the fill value; the row path does the same)."""
        meta = self.index.require(name, str(self.path))
        if not meta.shape or meta.shape[0] == 0 or sys.byteorder != "little":
            return None
        array = self._checked_array(meta)
        serializer = getattr(array, "serializer", None)
        endian = getattr(serializer, "endian", None)  # None for one-byte words
        raw = type(serializer).__name__ == "BytesCodec" and (endian is None or endian.value == "little")
        if not raw or array.compressors or array.filters or tuple(array.chunks[1:]) != meta.shape[1:]:
            return None
        files = [(f"tensors/{relative}", length) for relative, _, length in row_chunk_files(array, meta)]
        if not all((self.path / relative).is_file() for relative, _ in files):
            return None
        return [Extent(self._files.fd(relative), 0, length, self.path / relative) for relative, length in files]

    def close(self) -> None:
        self._files.close()

    def row_reader(self, name: str) -> RowReader | None:
        meta = self.index.require(name, str(self.path))
        if not meta.shape:
            return None
        array = self._checked_array(meta)

        def read(start: int, stop: int) -> torch.Tensor:
            try:
                data = array[start:stop]
            except Exception as err:
                raise ReshapeError(
                    f"{self.path / 'tensors' / name}: chunk of rows {start}..{stop} unreadable ({err}); truncated or "
                    "corrupt"
                ) from err
            return _from_numpy(np.asarray(data), meta.dtype)

        return read

    def read_object(self, name: str) -> bytes:
        return bytes(np.asarray(self._array("objects", name)[...]).tobytes())


class ZarrWriter(CheckpointWriter):
    """Writes a zarr v3 group (uncompressed, so conversion runs at disk speed and stays exact)."""

    format_name = "zarr"

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        zarr = _zarr()
        self.root = zarr.open_group(store=str(self.target), mode="w", zarr_format=3)
        self.tensors = self.root.create_group("tensors")
        self.objects = self.root.create_group("objects")
        self._open: list[int] = []  # chunk files of the tensor being streamed

    def _grid_pieces(self, name: str) -> list[Piece]:
        """Pieces the chunk grid aligns with: the plan's `grid` (flat FSDP cuts left out, see `LayoutPlan`)."""
        return getattr(self.pieces, "grid", self.pieces)[name]

    def _create(self, name: str):
        meta = self.index.tensors[name]
        return self.tensors.create_array(
            name,
            shape=meta.shape,
            chunks=chunk_shape(meta, self._grid_pieces(name)),
            dtype=_WORD[meta.dtype.itemsize],
            compressors=None,
            fill_value=0,
            attributes={"dtype": dtype_name(meta.dtype)},
        )

    def _close_chunk_files(self) -> None:
        for fd in self._open:
            os.close(fd)
        self._open.clear()

    def can_stream(self, name: str) -> bool:
        """Chunks of whole rows are runs of the logical bytes; uncompressed, each chunk file is just those bytes."""
        meta = self.index.tensors[name]
        if not meta.shape or meta.shape[0] == 0 or sys.byteorder != "little":
            return False
        return chunk_shape(meta, self._grid_pieces(name))[1:] == meta.shape[1:]

    def stream_targets(self, name: str) -> list[Target]:
        """One chunk file per dim-0 chunk, written as zarr v3 stores it (raw little-endian words, no codec)."""
        self._close_chunk_files()
        meta = self.index.tensors[name]
        array = self._create(name)
        chunk_bytes = array.chunks[0] * (meta.nbytes // meta.shape[0])
        targets = []
        for relative, start, length in row_chunk_files(array, meta):
            path = self.target / "tensors" / relative
            path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
            self._open.append(fd)
            os.ftruncate(fd, chunk_bytes)  # an edge chunk is stored whole, padded with the fill value 0
            targets.append(Target(fd, 0, start, length))
        return targets

    def can_write_rows(self, name: str) -> bool:
        return bool(self.index.tensors[name].shape)

    def row_granule(self, name: str) -> int:
        return chunk_shape(self.index.tensors[name], self._grid_pieces(name))[0]

    def row_writer(self, name: str) -> RowWriter:
        self._close_chunk_files()
        array = self._create(name)

        def write(start: int, rows: torch.Tensor) -> None:
            array[start : start + rows.shape[0]] = _to_numpy(rows)

        return write

    def write_tensor(self, name: str, tensor: torch.Tensor) -> None:
        self._close_chunk_files()
        meta = self.index.tensors[name]
        words = _to_numpy(tensor)
        array = self._create(name)
        # zarr copies what it encodes (and encodes several chunks at once), so hand it one slab of whole chunks
        # at a time: the extra memory is a slab, not a second copy of the tensor
        chunks = array.chunks
        if not meta.shape or meta.shape[0] == 0:
            array[...] = words
            return
        row_bytes = max(meta.nbytes // meta.shape[0], 1)
        step = max(chunks[0], SLAB_BYTES // row_bytes // chunks[0] * chunks[0])
        for start in range(0, meta.shape[0], step):
            array[start : start + step] = words[start : start + step]

    def write_object(self, name: str, payload: bytes) -> None:
        data = np.frombuffer(payload, dtype=np.uint8)
        array = self.objects.create_array(
            name, shape=data.shape, chunks=data.shape or (1,), dtype=np.uint8, compressors=None
        )
        array[...] = data

    def finish(self, sidecar: dict) -> None:
        self._close_chunk_files()
        paths = {k: list(self.index.path_of(k)) for k in [*sidecar["tensors"], *sidecar["objects"]]}
        self.root.attrs["ckpt_reshape"] = {**sidecar, "paths": paths, "hf_config": self.index.hf_config}
        if self.durable:
            for path in sorted(self.target.rglob("*"), reverse=True):
                fsync_path(path)
            fsync_path(self.target)
