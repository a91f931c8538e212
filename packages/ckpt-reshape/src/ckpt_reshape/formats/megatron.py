"""Megatron-Core `torch_dist` checkpoints (megatron-core's `dist_checkpointing.save`), read and written.

On disk such a checkpoint is a DCP folder (`.metadata`, `__<rank>_<i>.distcp`) plus `common.pt` (the
non-sharded state: iteration, the optimizer's param groups, args) and `metadata.json` naming the backend. So
the reader is the DCP reader with Megatron's keys turned into logical names (`megatron_names`: the layer axis
taken off each stacked tensor, one logical tensor per layer; experts stay stacked by global expert id) and the
writer is the DCP writer putting each layer back at its offset of the stacked key, so megatron's own
`dist_checkpointing.load` reads it on any TP / PP / EP (it reshards by global offsets, as DCP does).
"""

from __future__ import annotations

import dataclasses
import enum
import importlib
import io
import json
from pathlib import Path

import torch
from torch.distributed.checkpoint.filesystem import _StorageInfo
from torch.distributed.checkpoint.metadata import (
    ChunkStorageMetadata,
    Metadata,
    MetadataIndex,
    TensorProperties,
    TensorStorageMetadata,
)
from zaya_config.safe_pickle import load_restricted
from zaya_config.train_checkpoint.dcp_metadata import HOLDS, METADATA_NAME, dcp_metadata_global

from ckpt_reshape.errors import ReshapeError
from ckpt_reshape.formats.base import write_bytes_file, write_text_file
from ckpt_reshape.formats.dcp import DcpReader, DcpWriter
from ckpt_reshape.index import CheckpointIndex, TensorMeta
from ckpt_reshape.megatron_names import (
    COMMON_ENTRY,
    COMMON_NAME,
    MEGATRON_METADATA,
    OPTIMIZER_REFUSAL,
    is_stacked,
    logical_name,
    logical_path,
    megatron_args,
    megatron_key,
    megatron_split_table,
    object_key,
    object_name,
)
from ckpt_reshape.torch_zip import LazyTensor, placeholder, save_skeleton

_PLANNER = "torch.distributed.checkpoint.planner"  # megatron keeps every rank's SavePlan in `.metadata`
_BACKEND = {"sharded_backend": "torch_dist", "sharded_backend_version": 1, "common_backend": "torch",
            "common_backend_version": 1}  # fmt: skip


def megatron_metadata_global(module: str, name: str) -> object | None:
    """What a Megatron `.metadata` may name: DCP's own (zaya-config's list) plus the dataclasses and enums of
    DCP's planner (megatron stores `all_local_plans` there); data, never code."""
    found = dcp_metadata_global(module, name)
    if found is None and module == _PLANNER:
        found = getattr(importlib.import_module(module), name, None)
        is_data = isinstance(found, type) and (dataclasses.is_dataclass(found) or issubclass(found, enum.Enum))
        return found if is_data else None
    return found


class MegatronReader(DcpReader):
    """A megatron-core `torch_dist` folder under logical names (see module docstring)."""

    format_name = "megatron"

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        raw_tensors, raw_objects, raw_chunks = self.index.tensors, self.index.objects, self._chunks
        self.index = CheckpointIndex(layout=self.index.layout, hf_config=self.index.hf_config)
        self._chunks, self._object_keys, self._unconverted = {}, {}, []
        for key, meta in raw_tensors.items():
            if logical_name(key, None) is None:
                self._unconverted.append(key)
            elif not is_stacked(key):
                self._add(logical_name(key, None), meta.shape, meta.dtype, raw_chunks[key])
            else:
                self._unstack(key, meta, raw_chunks[key])
        for key in raw_objects:
            if key.startswith("optimizer."):  # a distributed optimizer's per-DP-group objects
                self._unconverted.append(key)
                continue
            self._object_keys[object_name(key)] = key
            self.index.objects.append(object_name(key))
            self.index.paths[object_name(key)] = ("model", key)
        common = self.path / COMMON_NAME
        if common.is_file() and common.read_bytes() != empty_common():  # ours when the source had none: no entry
            self.index.objects.append(COMMON_ENTRY)

    def _read_metadata(self) -> Metadata:
        return load_restricted((self.path / METADATA_NAME).read_bytes(), megatron_metadata_global,
                               self.path / METADATA_NAME, HOLDS + ", and DCP's save plans")  # fmt: skip

    def _add(self, name: str, shape: tuple[int, ...], dtype: torch.dtype, chunks: list) -> None:
        self.index.tensors[name] = TensorMeta(name, tuple(shape), dtype)
        self.index.paths[name] = logical_path(name)
        self._chunks[name] = chunks

    def _unstack(self, key: str, meta: TensorMeta, chunks: list) -> None:
        """One logical tensor per layer of a stacked key: its chunks at that layer, the layer axis dropped."""
        layers: dict[int, list] = {i: [] for i in range(meta.shape[0])}
        for chunk, info in chunks:
            if chunk.sizes[0] != 1:
                raise ReshapeError(
                    f"{self.path / METADATA_NAME}: chunk of {key!r} at {list(chunk.offsets)} spans "
                    f"{chunk.sizes[0]} layers; megatron saves one layer per chunk, this is not its torch_dist layout"
                )
            inner = ChunkStorageMetadata(offsets=torch.Size(chunk.offsets[1:]), sizes=torch.Size(chunk.sizes[1:]))
            layers[chunk.offsets[0]].append((inner, info))
        for layer, found in layers.items():
            self._add(logical_name(key, layer), meta.shape[1:], meta.dtype, found)

    def _chunk(self, meta: TensorMeta, chunk: ChunkStorageMetadata, info: _StorageInfo):
        archive, lazy = self._archive(meta.name, info)
        if len(lazy.shape) == len(chunk.sizes) + 1 and lazy.shape[0] == 1 and lazy.is_contiguous():
            lazy = LazyTensor(lazy.storage, lazy.storage_offset, lazy.shape[1:], lazy.stride[1:])  # the layer axis
        if lazy.shape != tuple(chunk.sizes) or lazy.dtype != meta.dtype:
            raise ReshapeError(
                f"{self.path / info.relative_path}: chunk of {meta.name!r} at {list(chunk.offsets)} is "
                f"{list(lazy.shape)} {lazy.dtype}, metadata says {list(chunk.sizes)} {meta.dtype}"
            )
        return archive, lazy

    def read_object(self, name: str) -> bytes:
        if name == COMMON_ENTRY:
            return (self.path / COMMON_NAME).read_bytes()
        return super().read_object(self._object_keys[name])

    def split_table(self):
        """Megatron's TP / PP split of its GPT tensors (`megatron_names.megatron_split_table`)."""
        return megatron_split_table(megatron_args(self.path))

    def not_carried(self, index: CheckpointIndex) -> list[str]:
        """Non-tensor entries with no place in a Megatron folder (a zaya-train run's param groups, trainer state)."""
        return [n for n in index.objects if n != COMMON_ENTRY and object_key(n) is None]

    def needs_model_only(self) -> str | None:
        if not self._unconverted:
            return None
        return (
            f"{self.path}: {OPTIMIZER_REFUSAL} ({len(self._unconverted)} optimizer entries in a layout ckpt-reshape "
            f"does not map, e.g. {self._unconverted[0]!r}; only optimizer.state.<state>.<parameter> converts)"
        )


class MegatronWriter(DcpWriter):
    """Writes logical tensors as a megatron-core `torch_dist` folder (each layer at its offset of the stacked key)."""

    format_name = "megatron"

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._keys: dict[str, tuple[str, int | None]] = {}
        stacks: dict[str, dict[int, TensorMeta]] = {}
        unassigned = []
        for name, meta in self.index.tensors.items():
            found = megatron_key(name)
            if found is None:
                unassigned.append(name)
                continue
            self._keys[name] = found
            if found[1] is not None:
                stacks.setdefault(found[0], {})[found[1]] = meta
        if unassigned:
            raise ReshapeError(
                f"tensor {unassigned[0]!r} (and {len(unassigned) - 1} more) has no Megatron key: only model.<key> "
                "and optim.state.<parameter>.<state> map to one; convert with --model-only or rename it"
            )
        self._stacked_shape: dict[str, tuple[int, ...]] = {}
        for key, layers in stacks.items():
            missing = sorted(set(range(max(layers) + 1)) - set(layers))
            shapes = {(m.shape, m.dtype) for m in layers.values()}
            if missing or len(shapes) > 1:
                why = f"layers {missing} are missing" if missing else f"its layers differ in shape or dtype {shapes}"
                raise ReshapeError(f"Megatron key {key!r}: {why}; a stacked Megatron tensor needs every layer alike")
            self._stacked_shape[key] = (max(layers) + 1, *next(iter(shapes))[0])
        self._common = empty_common()  # megatron's load needs the file
        self.dropped: list[str] = []

    def _place(self, name: str):
        meta = self.index.tensors[name]
        key, layer = self._keys[name]
        lead = () if layer is None else (layer,)
        ones = (1,) * len(lead)
        entry = self._state_meta.setdefault(
            key,
            TensorStorageMetadata(
                properties=TensorProperties(dtype=meta.dtype),
                size=torch.Size(self._stacked_shape.get(key, meta.shape)),
                chunks=[],
            ),
        )
        placed = []
        for piece in self.pieces[name]:
            stream = self._file(piece.rank)
            start = stream.tell()
            offsets = save_skeleton(placeholder(ones + piece.sizes, meta.dtype), stream, Path(stream.name))
            placed.append((piece, stream.fileno(), offsets[()]))
            index = MetadataIndex(key, lead + piece.offsets, len(entry.chunks))
            self._storage[index] = _StorageInfo(Path(stream.name).name, start, stream.tell() - start)
            entry.chunks.append(ChunkStorageMetadata(offsets=torch.Size(lead + piece.offsets),
                                                     sizes=torch.Size(ones + piece.sizes)))  # fmt: skip
        return placed

    def write_object(self, name: str, payload: bytes) -> None:
        if name == COMMON_ENTRY:
            self._common = payload
            return
        key = object_key(name)
        if key is None:
            self.dropped.append(name)  # e.g. a zaya-train run's trainer state: Megatron has no place for it
            return
        super().write_object(key, payload)

    def _metadata_keys(self) -> list[str]:
        return list(self._state_meta)

    def _planner_data(self) -> dict | None:
        return None  # as megatron writes it: its keys are flat

    def finish(self, sidecar: dict) -> None:
        write_bytes_file(self.target / COMMON_NAME, self._common, self.durable)
        write_text_file(self.target / MEGATRON_METADATA, json.dumps(_BACKEND), self.durable)
        super().finish(sidecar)


def empty_common() -> bytes:
    """The `common.pt` written when the source has no Megatron common state: `torch.save({})`."""
    buffer = io.BytesIO()
    torch.save({}, buffer)
    return buffer.getvalue()
