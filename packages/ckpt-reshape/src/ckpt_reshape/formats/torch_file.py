"""Single-file `torch.save` checkpoints: the nested `{"model": ..., "optim": ..., "train": ...}` dict that
`dcp_to_torch_save` produces (a bare state dict is read as the model's), tensors streamed through
`torch_zip`. The file carries this package's sidecar (layout, checksums) as a uint8 tensor under
`_ckpt_reshape`, reserved at its final length before any data is written.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import torch

from ckpt_reshape.byte_ranges import Extent, Target
from ckpt_reshape.errors import ReshapeError
from ckpt_reshape.formats.base import CheckpointReader, CheckpointWriter, layout_from_sidecar
from ckpt_reshape.index import TensorMeta
from ckpt_reshape.objects import load_object
from ckpt_reshape.row_blocks import RowWriter, piece_row_writer
from ckpt_reshape.torch_zip import LazyTensor, TorchArchive, UnsupportedPickle, placeholder, pwrite_from, save_skeleton

SIDECAR_KEY = "_ckpt_reshape"
_TOP_LEVEL = ("model", "optim", "train")


def is_torch_file(path: Path) -> bool:
    """A file that starts like a zip archive (torch.save's format since 1.6)."""
    if not path.is_file():
        return False
    with open(path, "rb") as stream:
        return stream.read(4) == b"PK\x03\x04"


def _is_leaf_container(value) -> bool:
    """DCP keeps lists / tuples that hold no tensors or containers as single entries (e.g. param names)."""
    return isinstance(value, list | tuple) and not any(
        isinstance(v, dict | list | tuple | torch.Tensor | LazyTensor) for v in value
    )


def flatten_entries(obj, path: tuple = ()):
    """(path, leaf) pairs with DCP's flattening rules: dicts always open, lists only when they hold containers."""
    if isinstance(obj, dict):
        for key, value in obj.items():
            yield from flatten_entries(value, (*path, key))
    elif isinstance(obj, list | tuple) and not _is_leaf_container(obj):
        for i, value in enumerate(obj):
            yield from flatten_entries(value, (*path, i))
    else:
        yield path, obj


def nest(entries: dict[tuple, object]):
    """Rebuild nested dicts / lists from (path -> value); integer keys become list positions."""
    root: dict = {}
    for path, value in entries.items():
        node = root
        for key in path[:-1]:
            node = node.setdefault(key, {})
        node[path[-1]] = value
    return _lists(root)


def _lists(node):
    if isinstance(node, dict):
        node = {k: _lists(v) for k, v in node.items()}
        if node and all(isinstance(k, int) for k in node) and sorted(node) == list(range(len(node))):
            return [node[i] for i in range(len(node))]
    return node


class TorchFileReader(CheckpointReader):
    """Reads a torch.save file lazily (falls back to `torch.load(mmap=True)` for unusual pickles)."""

    format_name = "torch"

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.archive = TorchArchive(self.path)
        try:
            obj = self.archive.structure()
        except UnsupportedPickle:
            obj = torch.load(self.path, mmap=True, weights_only=True, map_location="cpu")
        except Exception as err:
            raise ReshapeError(f"{self.path}: torch.save pickle does not load ({err}); corrupt file") from err
        if not isinstance(obj, dict):
            raise ReshapeError(f"{self.path}: holds a {type(obj).__name__}, expected a dict (a state dict)")
        sidecar = obj.pop(SIDECAR_KEY, None)
        if sidecar is not None:
            raw = self._materialise(sidecar)
            self.sidecar = json.loads(bytes(raw.numpy()).rstrip(b" ").decode())
            self.index.layout = layout_from_sidecar(self.sidecar)
            self.index.hf_config = self.sidecar.get("hf_config")
        if not any(k in obj for k in _TOP_LEVEL):
            obj = {"model": obj}
        self._leaves: dict[str, object] = {}
        for path, leaf in flatten_entries(obj):
            name = ".".join(str(p) for p in path)
            self.index.paths[name] = path
            self._leaves[name] = leaf
            if isinstance(leaf, LazyTensor | torch.Tensor):
                self.index.tensors[name] = TensorMeta(name, tuple(leaf.shape), leaf.dtype)
            else:
                self.index.objects.append(name)

    def _materialise(self, leaf) -> torch.Tensor:
        return self.archive.read(leaf) if isinstance(leaf, LazyTensor) else leaf.clone()

    def read_tensor(self, name: str) -> torch.Tensor:
        self.index.require(name, str(self.path))
        return self._materialise(self._leaves[name])

    def byte_extents(self, name: str) -> list[Extent] | None:
        self.index.require(name, str(self.path))
        leaf = self._leaves[name]
        extent = self.archive.extent(leaf) if isinstance(leaf, LazyTensor) else None
        return None if extent is None else [extent]

    def read_object(self, name: str) -> bytes:
        buffer = io.BytesIO()
        torch.save(self._leaves[name], buffer)
        return buffer.getvalue()

    def close(self) -> None:
        self.archive.close()


class TorchFileWriter(CheckpointWriter):
    """Writes one torch.save file: a data-less skeleton first, then each tensor's bytes into its record."""

    format_name = "torch"
    single_file = True

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._objects: dict[str, object] = {}
        self._offsets: dict[str, int] | None = None
        self._stream = None
        self._sidecar_len = 0

    def write_object(self, name: str, payload: bytes) -> None:
        self._objects[name] = load_object(payload, name)

    def reserve_sidecar(self, sidecar_template: dict) -> None:
        """Fix the sidecar's size before the skeleton is saved (checksums are fixed-width hex)."""
        self._sidecar_len = len(json.dumps(sidecar_template).encode()) + 64

    def _skeleton(self) -> None:
        entries: dict[tuple, object] = {}
        order = [n for n in self.index.paths if n in self.index.tensors or n in self._objects]
        order += [n for n in [*self.index.tensors, *self.index.objects] if n not in self.index.paths]
        for name in order:
            meta = self.index.tensors.get(name)
            value = self._objects[name] if meta is None else placeholder(meta.shape, meta.dtype)
            entries[self.index.path_of(name)] = value
        obj = nest(entries) if entries else {}
        obj[SIDECAR_KEY] = placeholder((self._sidecar_len,), torch.uint8)
        self._stream = open(self.target, "w+b")  # noqa: SIM115
        by_path = save_skeleton(obj, self._stream, self.target)
        self._offsets = {name: by_path[self.index.path_of(name)] for name in self.index.tensors}
        self._offsets[SIDECAR_KEY] = by_path[(SIDECAR_KEY,)]

    def write_tensor(self, name: str, tensor: torch.Tensor) -> None:
        if self._offsets is None:
            self._skeleton()
        pwrite_from(self._stream.fileno(), self._offsets[name], tensor)

    def can_stream(self, name: str) -> bool:
        return True

    def stream_targets(self, name: str) -> list[Target]:
        if self._offsets is None:
            self._skeleton()
        return [Target(self._stream.fileno(), self._offsets[name], 0, self.index.tensors[name].nbytes)]

    def can_write_rows(self, name: str) -> bool:
        return bool(self.index.tensors[name].shape)

    def row_writer(self, name: str) -> RowWriter:
        meta = self.index.tensors[name]
        (target,) = self.stream_targets(name)
        return piece_row_writer(meta, [((0,) * len(meta.shape), meta.shape, target.fd, target.offset)])

    def finish(self, sidecar: dict) -> None:
        if self._offsets is None:
            self._skeleton()
        blob = json.dumps(sidecar).encode()
        if len(blob) > self._sidecar_len:
            raise ReshapeError(f"{self.target}: sidecar grew past its reserved {self._sidecar_len} bytes (bug)")
        blob += b" " * (self._sidecar_len - len(blob))
        pwrite_from(
            self._stream.fileno(), self._offsets[SIDECAR_KEY], torch.frombuffer(bytearray(blob), dtype=torch.uint8)
        )
        self._stream.flush()
        self.fsync(self._stream.fileno())
        self._stream.close()
