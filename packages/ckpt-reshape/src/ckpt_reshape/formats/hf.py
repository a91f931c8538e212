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

import torch

from ckpt_reshape.errors import ReshapeError
from ckpt_reshape.formats.base import (
    CheckpointReader,
    CheckpointWriter,
    fsync_path,
    layout_from_sidecar,
    read_sidecar,
    write_sidecar,
)
from ckpt_reshape.index import TensorMeta
from ckpt_reshape.names import HfNameMap, default_name_map
from ckpt_reshape.torch_zip import pread_into, pwrite_from

INDEX_NAME = "model.safetensors.index.json"
DEFAULT_MAX_SHARD_BYTES = 5 * 10**9
_ST_DTYPES = {
    "F64": torch.float64,
    "F32": torch.float32,
    "F16": torch.float16,
    "BF16": torch.bfloat16,
    "I64": torch.int64,
    "I32": torch.int32,
    "I16": torch.int16,
    "I8": torch.int8,
    "U8": torch.uint8,
    "BOOL": torch.bool,
    "F8_E4M3": torch.float8_e4m3fn,
    "F8_E5M2": torch.float8_e5m2,
}
_ST_NAMES = {v: k for k, v in _ST_DTYPES.items()}


def is_hf_folder(path: Path) -> bool:
    """A folder with an index file or at least one `.safetensors` file."""
    return path.is_dir() and ((path / INDEX_NAME).is_file() or any(path.glob("*.safetensors")))


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


class HfReader(CheckpointReader):
    """Reads an HF safetensors folder; logical names are `model.<fqn>` via the model's HF key map."""

    format_name = "hf"

    def __init__(self, path: Path, name_map: HfNameMap | None = None) -> None:
        super().__init__(path)
        self._names = name_map or default_name_map()
        index_path = self.path / INDEX_NAME
        if index_path.is_file():
            try:
                weight_map = json.loads(index_path.read_text(encoding="utf-8"))["weight_map"]
            except (ValueError, KeyError, TypeError) as err:
                raise ReshapeError(f"{index_path}: not a safetensors index ({err})") from err
            files = sorted(set(weight_map.values()))
        else:
            files, weight_map = sorted(p.name for p in self.path.glob("*.safetensors")), None
        self._fds: dict[str, int] = {}
        self._where: dict[str, tuple[str, int, int]] = {}  # logical name -> (file, offset, nbytes)
        for file in files:
            file_path = self.path / file
            if not file_path.is_file():
                raise ReshapeError(f"{file_path}: shard listed in {INDEX_NAME} is missing; copy the whole folder")
            fd = self._fds[file] = os.open(file_path, os.O_RDONLY)
            header, data_start = _read_header(file_path, fd)
            file_size = os.fstat(fd).st_size
            for hf_name, entry in header.items():
                if hf_name == "__metadata__":
                    continue
                self._add(file_path, file, hf_name, entry, data_start, file_size)
        if weight_map is not None:
            missing = sorted(set(weight_map) - {self._names.to_hf(n[len("model.") :]) for n in self.index.tensors})
            if missing:
                raise ReshapeError(f"{index_path}: tensors {missing[:5]} are listed but absent from their shards")
        config_path = self.path / "config.json"
        if config_path.is_file():
            self.index.hf_config = json.loads(config_path.read_text(encoding="utf-8"))
        self.sidecar = read_sidecar(self.path)
        self.index.layout = layout_from_sidecar(self.sidecar)

    def _add(self, file_path: Path, file: str, hf_name: str, entry: dict, data_start: int, file_size: int) -> None:
        dtype = _ST_DTYPES.get(entry.get("dtype", "?"))
        if dtype is None:
            raise ReshapeError(f"{file_path}: tensor {hf_name!r} has unsupported dtype {entry.get('dtype')!r}")
        shape = tuple(entry["shape"])
        begin, end = entry["data_offsets"]
        meta = TensorMeta("model." + self._names.from_hf(hf_name), shape, dtype)
        if end - begin != meta.nbytes:
            raise ReshapeError(
                f"{file_path}: tensor {hf_name!r} is {shape} {dtype} ({meta.nbytes} bytes) but occupies "
                f"{end - begin} bytes; mismatched shape or dtype"
            )
        if data_start + end > file_size:
            raise ReshapeError(
                f"{file_path}: tensor {hf_name!r} ends at byte {data_start + end}, file has {file_size} (truncated)"
            )
        self.index.tensors[meta.name] = meta
        self.index.paths[meta.name] = ("model", meta.name[len("model.") :])
        self._where[meta.name] = (file, data_start + begin, end - begin)

    def read_tensor(self, name: str) -> torch.Tensor:
        meta = self.index.require(name, str(self.path))
        file, offset, _ = self._where[name]
        out = torch.empty(meta.shape, dtype=meta.dtype)
        pread_into(self._fds[file], offset, out, self.path / file)
        return out

    def close(self) -> None:
        for fd in self._fds.values():
            os.close(fd)
        self._fds.clear()


class HfWriter(CheckpointWriter):
    """Writes model weights as HF safetensors shards (optimizer and trainer entries are not part of HF)."""

    format_name = "hf"
    model_only = True

    def __init__(self, *args, name_map: HfNameMap | None = None, max_shard_bytes: int = DEFAULT_MAX_SHARD_BYTES, **kw):
        super().__init__(*args, **kw)
        self._names = name_map or default_name_map()
        self.target.mkdir(parents=True, exist_ok=True)
        shards: list[list[TensorMeta]] = [[]]
        used = 0
        for meta in self.index.tensors.values():
            if shards[-1] and used + meta.nbytes > max_shard_bytes:
                shards.append([])
                used = 0
            shards[-1].append(meta)
            used += meta.nbytes
        n = len(shards)
        self._slots: dict[str, tuple[int, int]] = {}  # logical name -> (fd, absolute offset)
        self._weight_map: dict[str, str] = {}
        self._fds: list[int] = []
        for i, metas in enumerate(shards):
            file = "model.safetensors" if n == 1 else f"model-{i + 1:05d}-of-{n:05d}.safetensors"
            header, pos = {"__metadata__": {"format": "pt"}}, 0
            for meta in metas:
                hf_name = self._names.to_hf(meta.name[len("model.") :])
                header[hf_name] = {
                    "dtype": _ST_NAMES[meta.dtype],
                    "shape": list(meta.shape),
                    "data_offsets": [pos, pos + meta.nbytes],
                }
                self._weight_map[hf_name] = file
                pos += meta.nbytes
            blob = json.dumps(header, separators=(",", ":")).encode()
            blob += b" " * (-len(blob) % 8)
            fd = os.open(self.target / file, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
            os.pwrite(fd, struct.pack("<Q", len(blob)) + blob, 0)
            os.ftruncate(fd, 8 + len(blob) + pos)
            self._fds.append(fd)
            for meta in metas:
                self._slots[meta.name] = (
                    fd,
                    8 + len(blob) + header[self._names.to_hf(meta.name[6:])]["data_offsets"][0],
                )
        self._total = sum(m.nbytes for m in self.index.tensors.values())

    def write_tensor(self, name: str, tensor: torch.Tensor) -> None:
        fd, offset = self._slots[name]
        pwrite_from(fd, offset, tensor)

    def finish(self, sidecar: dict) -> None:
        for fd in self._fds:
            os.fsync(fd)
            os.close(fd)
        index = {"metadata": {"total_size": self._total}, "weight_map": dict(sorted(self._weight_map.items()))}
        (self.target / INDEX_NAME).write_text(json.dumps(index, indent=2), encoding="utf-8")
        if self.index.hf_config is not None:
            (self.target / "config.json").write_text(json.dumps(self.index.hf_config, indent=2), encoding="utf-8")
        write_sidecar(self.target, sidecar)
        fsync_path(self.target)
