"""Hugging Face safetensors folders: `model-0000i-of-0000n.safetensors` shards plus
`model.safetensors.index.json`, HF `zaya` key names, `config.json` carried when known.

Headers are parsed and data is read with `preadv` here (not through `safe_open`'s mmap, which leaves every
touched page resident); writing lays out every shard's header first from the index (all shapes are known up
front), then streams each tensor's bytes to its offset, so a shard never has to sit in memory.
"""

from __future__ import annotations

import json
import os
import struct
from pathlib import Path
from typing import TYPE_CHECKING

from ckpt_reshape.byte_ranges import Extent, Target
from ckpt_reshape.errors import ReshapeError
from ckpt_reshape.formats.base import (
    CheckpointReader,
    CheckpointWriter,
    layout_from_sidecar,
    read_sidecar,
    write_sidecar,
    write_text_file,
)
from ckpt_reshape.index import CheckpointIndex, TensorMeta, dtype_from_name, dtype_name
from ckpt_reshape.names import IDENTITY, HfKeyMap, HfPart
from ckpt_reshape.open_files import OpenFiles
from ckpt_reshape.torch_zip import pread_into, pwrite_from

if TYPE_CHECKING:
    import torch

    from ckpt_reshape.row_blocks import RowWriter

INDEX_NAME = "model.safetensors.index.json"
DEFAULT_MAX_SHARD_BYTES = 5 * 10**9
_ST_DTYPES = {  # safetensors' dtype -> ours (`index.dtype_name`); the writer needs no torch
    "F64": "float64",
    "F32": "float32",
    "F16": "float16",
    "BF16": "bfloat16",
    "I64": "int64",
    "I32": "int32",
    "I16": "int16",
    "I8": "int8",
    "U8": "uint8",
    "BOOL": "bool",
    "F8_E4M3": "float8_e4m3fn",
    "F8_E5M2": "float8_e5m2",
}
_ST_NAMES = {v: k for k, v in _ST_DTYPES.items()}


def is_hf_folder(path: Path) -> bool:
    """A folder with an index file or at least one `.safetensors` file."""
    return path.is_dir() and ((path / INDEX_NAME).is_file() or any(path.glob("*.safetensors")))


def _nbytes(shape: tuple[int, ...], dtype: torch.dtype) -> int:
    n = dtype.itemsize
    for s in shape:
        n *= s
    return n


def _read_header(path: Path, fd: int) -> tuple[dict, int]:
    size = os.fstat(fd).st_size
    head = os.pread(fd, 8, 0)
    if len(head) < 8:
        raise ReshapeError(f"{path}: {size} bytes, too short for a safetensors header (truncated)")
    (length,) = struct.unpack("<Q", head)
    if length > min(size - 8, 100 << 20):
        raise ReshapeError(
            f"{path}: header length {length} exceeds the file ({size} bytes); truncated or not safetensors"
        )
    try:
        header = json.loads(os.pread(fd, length, 8))
    except ValueError as err:
        raise ReshapeError(f"{path}: safetensors header is not JSON ({err}); corrupt file") from err
    return header, 8 + length


def not_carried_by_hf(index: CheckpointIndex, key_map: HfKeyMap) -> list[str]:
    """Entries an HF folder written with `key_map` cannot hold: everything but model weights, and weights with no
    HF key (zaya-model-only buffers, a head tied to the embedding). `convert` reports these as dropped and
    `compare` expects them to be absent from an HF side."""
    return [
        name
        for name in [*index.tensors, *index.objects]
        if name in index.objects
        or not name.startswith("model.")
        or not key_map.parts(name[len("model.") :], index.tensors[name].shape)
    ]


class HfReader(CheckpointReader):
    """Reads an HF safetensors folder; logical names are `model.<fqn>` via the model's HF key map."""

    format_name = "hf"

    def __init__(self, path: Path, key_map: HfKeyMap | None = None) -> None:
        super().__init__(path)
        config_path = self.path / "config.json"
        if config_path.is_file():
            try:
                self.index.hf_config = json.loads(config_path.read_text(encoding="utf-8"))
            except ValueError as err:
                raise ReshapeError(f"{config_path}: not JSON ({err})") from err
        if key_map is None:
            from ckpt_reshape.zaya_names import key_map_for, resolve_model_config

            key_map = (
                key_map_for(self.index, resolve_model_config(None, self.index)) if self.index.hf_config else IDENTITY
            )
        self.key_map = key_map
        index_path = self.path / INDEX_NAME
        if index_path.is_file():
            try:
                weight_map = json.loads(index_path.read_text(encoding="utf-8"))["weight_map"]
            except (ValueError, KeyError, TypeError) as err:
                raise ReshapeError(f"{index_path}: not a safetensors index ({err})") from err
            files = sorted(set(weight_map.values()))
        else:
            files, weight_map = sorted(p.name for p in self.path.glob("*.safetensors")), None
        self._files = OpenFiles(self.path)
        self._raw: dict[str, tuple[str, int, TensorMeta]] = {}  # HF key -> (file, offset, meta)
        for file in files:
            file_path = self.path / file
            if not file_path.is_file():
                raise ReshapeError(f"{file_path}: shard listed in {INDEX_NAME} is missing; copy the whole folder")
            fd = self._files.fd(file)
            header, data_start = _read_header(file_path, fd)
            file_size = os.fstat(fd).st_size
            for hf_name, entry in header.items():
                if hf_name == "__metadata__":
                    continue
                self._add(file_path, file, hf_name, entry, data_start, file_size)
        if weight_map is not None:
            missing = sorted(set(weight_map) - set(self._raw))
            if missing:
                raise ReshapeError(f"{index_path}: tensors {missing[:5]} are listed but absent from their shards")
        groups, leftover = self.key_map.group(list(self._raw))
        groups.update({k: [HfPart(k)] for k in leftover})
        self._parts: dict[str, list[HfPart]] = {}
        for fqn, parts in groups.items():
            metas = [self._raw[p.hf][2] for p in parts]
            shape = list(metas[0].shape)
            if parts[0].dim is not None:
                shape[parts[0].dim] = sum(m.shape[parts[0].dim] for m in metas)
            name = "model." + fqn
            self.index.tensors[name] = TensorMeta(name, tuple(shape), metas[0].dtype)
            self.index.paths[name] = ("model", fqn)
            self._parts[name] = parts
        self.sidecar = read_sidecar(self.path)
        self.index.layout = layout_from_sidecar(self.sidecar)

    def _add(self, file_path: Path, file: str, hf_name: str, entry: dict, data_start: int, file_size: int) -> None:
        if entry.get("dtype") not in _ST_DTYPES:
            raise ReshapeError(f"{file_path}: tensor {hf_name!r} has unsupported dtype {entry.get('dtype')!r}")
        dtype = dtype_from_name(_ST_DTYPES[entry["dtype"]])
        shape = tuple(entry["shape"])
        begin, end = entry["data_offsets"]
        meta = TensorMeta(hf_name, shape, dtype)
        if end - begin != meta.nbytes:
            raise ReshapeError(
                f"{file_path}: tensor {hf_name!r} is {shape} {dtype} ({meta.nbytes} bytes) but occupies "
                f"{end - begin} bytes; mismatched shape or dtype"
            )
        if data_start + end > file_size:
            raise ReshapeError(
                f"{file_path}: tensor {hf_name!r} ends at byte {data_start + end}, file has {file_size} (truncated)"
            )
        self._raw[hf_name] = (file, data_start + begin, meta)

    def not_carried(self, index: CheckpointIndex) -> list[str]:
        return not_carried_by_hf(index, self.key_map)

    def read_tensor(self, name: str) -> torch.Tensor:
        import torch

        meta = self.index.require(name, str(self.path))
        out = torch.empty(meta.shape, dtype=meta.dtype)
        start = 0
        for part in self._parts[name]:
            file, offset, part_meta = self._raw[part.hf]
            if part_meta.dtype != meta.dtype:
                raise ReshapeError(f"{self.path / file}: {part.hf!r} is {part_meta.dtype}, its siblings {meta.dtype}")
            region = out if part.dim is None else out.narrow(part.dim, start, part_meta.shape[part.dim])
            if part.dim is not None:
                start += part_meta.shape[part.dim]
            target = region if region.is_contiguous() else torch.empty(part_meta.shape, dtype=meta.dtype)
            pread_into(self._files.fd(file), offset, target, self.path / file)
            if target is not region:
                region.copy_(target)
        return out

    def byte_extents(self, name: str) -> list[Extent] | None:
        meta = self.index.require(name, str(self.path))
        extents = []
        for part in self._parts[name]:
            if part.dim not in (None, 0):
                return None
            file, offset, part_meta = self._raw[part.hf]
            if part_meta.dtype != meta.dtype:
                return None  # read_tensor names the mismatch
            extents.append(Extent(self._files.fd(file), offset, part_meta.nbytes, self.path / file))
        return extents

    def close(self) -> None:
        self._files.close()


class HfWriter(CheckpointWriter):
    """Writes model weights as HF safetensors shards (optimizer and trainer entries are not part of HF)."""

    format_name = "hf"
    model_only = True

    def __init__(self, *args, key_map: HfKeyMap = IDENTITY, max_shard_bytes: int = DEFAULT_MAX_SHARD_BYTES, **kw):
        super().__init__(*args, **kw)
        self.target.mkdir(parents=True, exist_ok=True)
        self.dropped = not_carried_by_hf(self.index, key_map)
        entries: list[tuple[str, HfPart, tuple[int, ...], torch.dtype]] = []  # (logical, part, shape, dtype)
        for meta in self.index.tensors.values():
            for part in key_map.parts(meta.name[len("model.") :], meta.shape):  # none for the dropped
                shape = list(meta.shape)
                if part.dim is not None:
                    shape[part.dim] = part.length
                entries.append((meta.name, part, tuple(shape), meta.dtype))
        shards: list[list] = [[]]
        used = 0
        for entry in entries:
            nbytes = _nbytes(entry[2], entry[3])
            if shards[-1] and used + nbytes > max_shard_bytes:
                shards.append([])
                used = 0
            shards[-1].append(entry)
            used += nbytes
        self._slots: dict[str, list[tuple[int, int, HfPart]]] = {}  # logical -> [(fd, offset, part)]
        self._weight_map: dict[str, str] = {}
        self._fds: list[int] = []
        self._total = 0
        for i, shard in enumerate(shards):
            self._lay_out_shard(i, len(shards), shard)

    def _lay_out_shard(self, i: int, n: int, shard: list) -> None:
        file = "model.safetensors" if n == 1 else f"model-{i + 1:05d}-of-{n:05d}.safetensors"
        header: dict = {"__metadata__": {"format": "pt"}}
        pos, starts = 0, []
        for _, part, shape, dtype in shard:
            nbytes = _nbytes(shape, dtype)
            header[part.hf] = {
                "dtype": _ST_NAMES[dtype_name(dtype)],
                "shape": list(shape),
                "data_offsets": [pos, pos + nbytes],
            }
            self._weight_map[part.hf] = file
            starts.append(pos)
            pos += nbytes
        blob = json.dumps(header, separators=(",", ":")).encode()
        blob += b" " * (-len(blob) % 8)
        fd = os.open(self.target / file, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
        os.pwrite(fd, struct.pack("<Q", len(blob)) + blob, 0)
        os.ftruncate(fd, 8 + len(blob) + pos)
        self._fds.append(fd)
        self._total += pos
        for (name, part, _, _), start in zip(shard, starts, strict=True):
            self._slots.setdefault(name, []).append((fd, 8 + len(blob) + start, part))

    def write_tensor(self, name: str, tensor: torch.Tensor) -> None:
        for fd, offset, part in self._slots.get(name, []):
            pwrite_from(fd, offset, tensor if part.dim is None else tensor.narrow(part.dim, part.start, part.length))

    def can_stream(self, name: str) -> bool:
        return all(part.dim in (None, 0) for _, _, part in self._slots.get(name, []))

    def stream_targets(self, name: str) -> list[Target]:
        meta = self.index.tensors[name]
        row = meta.nbytes // meta.shape[0] if meta.shape and meta.shape[0] else 0
        return [
            Target(fd, offset, 0, meta.nbytes)
            if part.dim is None
            else Target(fd, offset, part.start * row, part.length * row)
            for fd, offset, part in self._slots.get(name, [])
        ]

    def can_write_rows(self, name: str) -> bool:
        return bool(self.index.tensors[name].shape) and self.can_stream(name)

    def row_writer(self, name: str) -> RowWriter:
        from ckpt_reshape.row_blocks import piece_row_writer

        meta = self.index.tensors[name]
        rest = meta.shape[1:]
        boxes = [
            ((0,) * len(meta.shape), meta.shape, fd, offset)
            if part.dim is None
            else ((part.start, *(0,) * len(rest)), (part.length, *rest), fd, offset)
            for fd, offset, part in self._slots.get(name, [])
        ]
        return piece_row_writer(meta, boxes)

    def finish(self, sidecar: dict) -> None:
        for fd in self._fds:
            self.fsync(fd)
            os.close(fd)
        index = {"metadata": {"total_size": self._total}, "weight_map": dict(sorted(self._weight_map.items()))}
        write_text_file(self.target / INDEX_NAME, json.dumps(index, indent=2), self.durable)
        if self.index.hf_config is not None:
            write_text_file(self.target / "config.json", json.dumps(self.index.hf_config, indent=2), self.durable)
        write_sidecar(self.target, sidecar, self.durable)
        self.fsync_path(self.target)
