"""torch.distributed.checkpoint folders, read and written in the exact on-disk form `FileSystemWriter` uses.

A DCP folder holds `.metadata` (a pickled `Metadata`: per tensor its global size, dtype and chunk list; per
chunk the file, byte offset and length of a `torch.save` archive of that chunk) and one `__<rank>_0.distcp`
file per saving rank. Reading goes chunk by chunk through `torch_zip.TorchArchive`, so a tensor costs its own
size in memory and nothing more; writing puts each target rank's pieces into that rank's file, which is what
`dcp.load` on the target world expects (it reads any chunking, so this is also what a resume sees).
zaya-train checkpoint folders are DCP folders plus per-rank `train-rank*.pkl` files and a `manifest.json`.
"""

from __future__ import annotations

import functools
import os
import pickle
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING

from zaya_config.train_checkpoint.dcp_metadata import read_dcp_metadata
from zaya_config.train_checkpoint.manifest import find_manifest

from ckpt_reshape import dcp_light
from ckpt_reshape.byte_ranges import Extent, Target, contiguous_start
from ckpt_reshape.errors import ReshapeError
from ckpt_reshape.formats.base import (
    CheckpointReader,
    CheckpointWriter,
    layout_from_sidecar,
    read_sidecar,
    write_sidecar,
)
from ckpt_reshape.index import TensorMeta
from ckpt_reshape.layout import ParallelLayout
from ckpt_reshape.open_files import OpenFiles
from ckpt_reshape.pieces import Piece
from ckpt_reshape.skeleton import write_skeleton
from ckpt_reshape.torch_names import NeedsTorch
from ckpt_reshape.torch_zip import LazyTensor, TorchArchive

if TYPE_CHECKING:
    import torch
    from torch.distributed.checkpoint.metadata import ChunkStorageMetadata, Metadata

    from ckpt_reshape.row_blocks import RowReader, RowWriter

METADATA_NAME = ".metadata"


def is_dcp_folder(path: Path) -> bool:
    """A folder with DCP's `.metadata` file."""
    return path.is_dir() and (path / METADATA_NAME).is_file()


def dcp_classes(light: bool):
    """The metadata classes (and `Size`) a DCP reader or writer uses: torch.distributed.checkpoint's, or with
    `light` the stand-ins of `dcp_light`, which read and write the same bytes without importing torch."""
    return dcp_light if light else _torch_classes()


@functools.cache
def _torch_classes() -> SimpleNamespace:
    import torch
    from torch.distributed.checkpoint import filesystem, metadata

    names = ("BytesStorageMetadata", "ChunkStorageMetadata", "Metadata", "MetadataIndex", "StorageMeta")
    classes = {name: getattr(metadata, name) for name in names}
    classes.update(TensorProperties=metadata.TensorProperties, TensorStorageMetadata=metadata.TensorStorageMetadata)
    return SimpleNamespace(**classes, _StorageInfo=filesystem._StorageInfo, Size=torch.Size)


class DcpReader(CheckpointReader):
    """Reads a DCP folder chunk by chunk (see module docstring)."""

    format_name = "dcp"

    def __init__(self, path: Path, light: bool = False) -> None:
        super().__init__(path)
        self.light = light  # torch-free: metadata and chunk headers as stand-ins; byte ranges only
        md = dcp_classes(light)
        meta_path = self.path / METADATA_NAME
        try:
            self.metadata: Metadata = self._read_metadata()  # restricted: a checkpoint is data, never code
        except (OSError, ValueError) as err:
            raise ReshapeError(
                f"{meta_path}: cannot read DCP metadata ({err}); the file is missing or corrupt"
            ) from err
        if not isinstance(self.metadata, md.Metadata) or self.metadata.storage_data is None:
            raise ReshapeError(f"{meta_path}: not a torch.distributed.checkpoint Metadata object")
        self._files = OpenFiles(self.path)  # reader threads open files concurrently; each is opened once
        planner = self.metadata.planner_data if isinstance(self.metadata.planner_data, dict) else {}
        self._chunks: dict[str, list[tuple[ChunkStorageMetadata, object]]] = {}  # (chunk, its _StorageInfo)
        self._keys: dict[str, str] = {}  # logical name -> DCP key, where they differ (see `_logical_name`)
        for key, item in self.metadata.state_dict_metadata.items():
            path = tuple(planner.get(key, key.split(".")))
            name = self._logical_name(key, path)
            if name != key:
                self._keys[name] = key
            self.index.paths[name] = self._logical_path(name, path)
            if isinstance(item, md.BytesStorageMetadata):
                self.index.objects.append(name)
                self._storage(name, md.MetadataIndex(key))
                continue
            self.index.tensors[name] = TensorMeta(name, tuple(item.size), item.properties.dtype)
            chunks = [(chunk, self._storage(name, md.MetadataIndex(key, chunk.offsets))) for chunk in item.chunks]
            covered = sum(_numel(c.sizes) for c, _ in chunks)
            if covered != _numel(item.size):
                raise ReshapeError(
                    f"{meta_path}: tensor {name!r} (shape {list(item.size)}) has chunks covering {covered} of "
                    f"{_numel(item.size)} elements; the checkpoint is incomplete"
                )
            self._chunks[name] = chunks
        self.sidecar = read_sidecar(self.path)
        self.index.layout = layout_from_sidecar(self.sidecar) or self._train_layout()
        self.index.hf_config = (self.sidecar or {}).get("hf_config")

    def _logical_name(self, key: str, path: tuple) -> str:
        """The logical name of DCP key `key` (nested path `path`): the key itself; other frameworks' names
        (torchtitan's) are mapped by their readers."""
        return key

    def _logical_path(self, name: str, path: tuple) -> tuple:
        """The nested state-dict path of logical entry `name` (stored at `path`): the same."""
        return path

    def _read_metadata(self) -> Metadata:
        """The folder's `.metadata`, through zaya-config's restricted unpickler."""
        return dcp_light.read_metadata(self.path) if self.light else read_dcp_metadata(self.path)

    def _train_layout(self) -> ParallelLayout | None:
        """A zaya-train folder records its world size, and its layout when the experts are split (expert
        parallelism: `layout` in the manifest); without one it is data parallel, FSDP when tensors are sharded."""
        manifest = find_manifest(self.path)
        if manifest is None or not isinstance(manifest.get("world_size"), int) or manifest["world_size"] < 1:
            return None
        if isinstance(manifest.get("layout"), dict):
            try:
                return ParallelLayout.from_dict(manifest["layout"])
            except (ReshapeError, TypeError, ValueError) as err:
                raise ReshapeError(
                    f"{self.path / 'manifest.json'}: `layout` {manifest['layout']!r} is invalid ({err})"
                ) from None
        return ParallelLayout(dp=manifest["world_size"], fsdp=any(len(c) > 1 for c in self._chunks.values()))

    def _storage(self, name: str, key):
        info = self.metadata.storage_data.get(key)
        if info is None:
            raise ReshapeError(f"{self.path / METADATA_NAME}: no storage entry for {name!r} at {key.offset}")
        file = self.path / info.relative_path
        if not file.is_file():
            raise ReshapeError(f"{file}: shard file missing (needed by tensor {name!r}); copy the whole folder")
        if info.transform_descriptors:
            raise ReshapeError(
                f"{file}: entry {name!r} uses storage transforms {info.transform_descriptors}, unsupported"
            )
        return info

    def _fd(self, relative_path: str) -> int:
        return self._files.fd(relative_path)

    def _archive(self, name: str, info) -> tuple[TorchArchive, LazyTensor]:
        file = self.path / info.relative_path
        size = os.fstat(self._fd(info.relative_path)).st_size
        if info.offset + info.length > size:
            raise ReshapeError(
                f"{file}: tensor {name!r} needs bytes {info.offset}..{info.offset + info.length} but the file has "
                f"{size} (truncated)"
            )
        archive = TorchArchive(file, info.offset, info.length, fd=self._fd(info.relative_path))
        try:
            lazy = archive.structure(self.light)
        except NeedsTorch:
            raise
        except Exception as err:
            raise ReshapeError(f"{file}: chunk of tensor {name!r} does not unpickle ({err}); corrupt file") from err
        if not isinstance(lazy, LazyTensor):
            raise ReshapeError(f"{file}: chunk of tensor {name!r} holds {type(lazy).__name__}, not a tensor")
        return archive, lazy

    def _chunk(self, meta: TensorMeta, chunk: ChunkStorageMetadata, info):
        """A chunk's archive and lazy tensor, checked against the shape and dtype the metadata gives it."""
        archive, lazy = self._archive(meta.name, info)
        if lazy.shape != tuple(chunk.sizes) or lazy.dtype != meta.dtype:
            raise ReshapeError(
                f"{self.path / info.relative_path}: chunk of {meta.name!r} at {list(chunk.offsets)} is "
                f"{list(lazy.shape)} {lazy.dtype}, metadata says {list(chunk.sizes)} {meta.dtype}"
            )
        return archive, lazy

    def read_tensor(self, name: str) -> torch.Tensor:
        """Assemble one logical tensor from its chunks."""
        if self.light:
            raise NeedsTorch(f"tensor {name!r} is read whole")
        import torch

        meta = self.index.require(name, str(self.path))
        chunks = self._chunks[name]
        out = None if len(chunks) == 1 else torch.empty(meta.shape, dtype=meta.dtype)
        for chunk, info in chunks:
            archive, lazy = self._chunk(meta, chunk, info)
            if out is None:
                return archive.read(lazy)
            region = out[tuple(slice(o, o + s) for o, s in zip(chunk.offsets, chunk.sizes, strict=True))]
            archive.read(lazy, out=region)
        return out

    def byte_extents(self, name: str) -> list[Extent] | None:
        """Each chunk's record, when every chunk is a row-major run of the logical tensor (dim-0 shards)."""
        meta = self.index.require(name, str(self.path))
        found = []
        for chunk, info in self._chunks[name]:
            start = contiguous_start(meta.shape, tuple(chunk.offsets), tuple(chunk.sizes))
            if start is None:
                return None
            archive, lazy = self._chunk(meta, chunk, info)
            extent = archive.extent(lazy)
            if extent is None:
                return None
            found.append((start, extent))
        found.sort(key=lambda item: item[0])
        return [extent for _, extent in found]

    def row_reader(self, name: str) -> RowReader | None:
        """Blocks of rows gathered from every chunk that holds some of them (chunks cut along any dims)."""
        if self.light:
            raise NeedsTorch(f"tensor {name!r} moves in blocks of rows")
        from ckpt_reshape.row_blocks import chunk_row_reader

        meta = self.index.require(name, str(self.path))
        if not meta.shape:
            return None
        boxes = []
        for chunk, info in self._chunks[name]:
            archive, lazy = self._chunk(meta, chunk, info)
            extent = archive.extent(lazy)
            if extent is None:
                return None
            boxes.append((tuple(chunk.offsets), tuple(chunk.sizes), extent))
        return chunk_row_reader(meta, boxes)

    def read_object(self, name: str) -> bytes:
        """Raw `torch.save` bytes of a non-tensor entry."""
        info = self.metadata.storage_data[dcp_classes(self.light).MetadataIndex(self._keys.get(name, name))]
        data = os.pread(self._fd(info.relative_path), info.length, info.offset)
        if len(data) != info.length:
            raise ReshapeError(f"{self.path / info.relative_path}: entry {name!r} is truncated")
        return data

    def extra_files(self) -> dict[str, Path]:
        """Files that are not DCP's own (zaya-train's `train-rank*.pkl`), excluding manifests and sidecars."""
        skip = {METADATA_NAME, "manifest.json", "ckpt-reshape.json"}
        used = {info.relative_path for info in self.metadata.storage_data.values()}
        return {
            p.relative_to(self.path).as_posix(): p
            for p in sorted(self.path.rglob("*"))
            if p.is_file() and p.name not in skip and p.relative_to(self.path).as_posix() not in used
        }

    def close(self) -> None:
        self._files.close()


class DcpWriter(CheckpointWriter):
    """Writes each target rank's pieces into `__<rank>_0.distcp` and a `.metadata` DCP can load."""

    format_name = "dcp"

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.target.mkdir(parents=True, exist_ok=True)
        self._files: dict[int, object] = {}
        self._state_meta: dict[str, object] = {}
        self._storage: dict = {}  # MetadataIndex -> _StorageInfo

    def _file(self, rank: int):
        stream = self._files.get(rank)
        if stream is None:
            stream = self._files[rank] = open(self.target / f"__{rank}_0.distcp", "w+b")  # noqa: SIM115
        return stream

    def _place(self, name: str) -> list[tuple[Piece, int, int]]:
        """Write the data-less archive of every piece of `name`; (piece, fd, data offset) for each."""
        meta = self.index.tensors[name]
        md = dcp_classes(self.light)
        chunks, placed = [], []
        for i, piece in enumerate(self.pieces[name]):
            stream = self._file(piece.rank)
            start = stream.tell()
            placed.append((piece, stream.fileno(), self._skeleton(stream, piece.sizes, meta.dtype)))
            relative = Path(stream.name).name
            key = md.MetadataIndex(self._key(name), piece.offsets, i)
            self._storage[key] = md._StorageInfo(relative, start, stream.tell() - start)
            chunks.append(md.ChunkStorageMetadata(offsets=md.Size(piece.offsets), sizes=md.Size(piece.sizes)))
        self._state_meta[self._key(name)] = md.TensorStorageMetadata(
            properties=md.TensorProperties(dtype=meta.dtype), size=md.Size(meta.shape), chunks=chunks
        )
        return placed

    def _skeleton(self, stream, sizes: tuple[int, ...], dtype) -> int:
        """Write a piece's data-less `torch.save` archive; returns the absolute offset of its data."""
        if self.light:
            return write_skeleton(stream, sizes, dtype)
        from ckpt_reshape.torch_zip import placeholder, save_skeleton

        return save_skeleton(placeholder(sizes, dtype), stream, Path(stream.name))[()]

    def write_tensor(self, name: str, tensor: torch.Tensor) -> None:
        from ckpt_reshape.torch_zip import pwrite_from

        for piece, fd, offset in self._place(name):
            pwrite_from(fd, offset, tensor[piece.slices()])

    def can_stream(self, name: str) -> bool:
        shape = self.index.tensors[name].shape
        return all(contiguous_start(shape, p.offsets, p.sizes) is not None for p in self.pieces[name])

    def stream_targets(self, name: str) -> list[Target]:
        meta = self.index.tensors[name]
        item = meta.dtype.itemsize
        targets = []
        for piece, fd, offset in self._place(name):
            numel = 1
            for s in piece.sizes:
                numel *= s
            start = contiguous_start(meta.shape, piece.offsets, piece.sizes)
            targets.append(Target(fd, offset, start * item, numel * item))
        return targets

    def can_write_rows(self, name: str) -> bool:
        return bool(self.index.tensors[name].shape)

    def row_writer(self, name: str) -> RowWriter:
        from ckpt_reshape.row_blocks import piece_row_writer

        meta = self.index.tensors[name]
        return piece_row_writer(meta, [(p.offsets, p.sizes, fd, offset) for p, fd, offset in self._place(name)])

    def write_object(self, name: str, payload: bytes) -> None:
        stream = self._file(0)
        start = stream.tell()
        stream.write(payload)
        md = dcp_classes(self.light)
        self._storage[md.MetadataIndex(self._key(name))] = md._StorageInfo(Path(stream.name).name, start, len(payload))
        self._state_meta[self._key(name)] = md.BytesStorageMetadata()

    def _key(self, name: str) -> str:
        """The DCP key logical entry `name` is stored under: its name (other frameworks' writers map it)."""
        return name

    def _path(self, name: str) -> tuple:
        """The nested state-dict path of entry `name` (what `dcp.load` unflattens by)."""
        return self.index.path_of(name)

    def _metadata_keys(self) -> list[str]:
        """The keys of `.metadata`, in the order of the index (tensors, then objects)."""
        return [self._key(n) for n in [*self.index.tensors, *self.index.objects]]

    def _planner_data(self) -> dict | None:
        """Each key's nested state-dict path."""
        return {self._key(n): self._path(n) for n in [*self.index.tensors, *self.index.objects]}

    def finish(self, sidecar: dict) -> None:
        for stream in self._files.values():
            stream.flush()
            self.fsync(stream.fileno())
            stream.close()
        order = self._metadata_keys()
        md = dcp_classes(self.light)
        metadata = md.Metadata(
            state_dict_metadata={k: self._state_meta[k] for k in order if k in self._state_meta},
            planner_data=self._planner_data(),
            storage_data=self._storage,
            storage_meta=md.StorageMeta(),
            version="1.0.0",
        )
        with open(self.target / METADATA_NAME, "wb") as stream:
            (dcp_light.dump_metadata if self.light else pickle.dump)(metadata, stream)
            stream.flush()
            self.fsync(stream.fileno())
        write_sidecar(self.target, sidecar, self.durable)
        self.fsync_path(self.target)


def _numel(shape) -> int:
    n = 1
    for s in shape:
        n *= s
    return n
