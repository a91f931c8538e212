"""Reading a DCP folder's `.metadata` pickle without running its code.

torch.distributed.checkpoint writes the metadata of a checkpoint (tensor shapes, dtypes, chunk offsets,
which file holds each chunk) as a pickle of its own dataclasses, and its `FileSystemReader` reads it back
with a plain `pickle.load`. `read_dcp_metadata` resolves only DCP's dataclasses and enums, `torch.Size`,
dtypes, layouts and paths; `safe_reader(folder)` is a `FileSystemReader` that reads its metadata that way
(when it is made, so a refusal is the error `dcp.load` callers see), for `dcp.load`. torch is imported only when a folder is read.
"""

from __future__ import annotations

import collections
import dataclasses
import enum
import functools
import importlib
import pathlib
from pathlib import Path
from typing import Any

from zaya_config.safe_pickle import load_restricted

METADATA_NAME = ".metadata"
HOLDS = "torch.distributed.checkpoint metadata: its dataclasses, torch.Size, dtypes and paths"
_DCP_MODULES = ("torch.distributed.checkpoint.metadata", "torch.distributed.checkpoint.filesystem")
_PLAIN = {
    ("collections", "OrderedDict"): collections.OrderedDict,
    ("pathlib", "PosixPath"): pathlib.PosixPath,  # building a path reads no file
    ("pathlib", "WindowsPath"): pathlib.WindowsPath,
    ("pathlib", "Path"): pathlib.Path,
    ("builtins", "set"): set,
    ("builtins", "frozenset"): frozenset,
    ("builtins", "slice"): slice,
}


def dcp_metadata_global(module: str, name: str) -> object | None:
    """The object a DCP `.metadata` pickle may name for `module.name`; None for anything else."""
    if (module, name) in _PLAIN:
        return _PLAIN[module, name]
    if module in _DCP_MODULES:
        found = getattr(importlib.import_module(module), name, None)
        is_data = isinstance(found, type) and (dataclasses.is_dataclass(found) or issubclass(found, enum.Enum))
        return found if is_data else None
    if module == "torch":
        import torch

        found = getattr(torch, name, None)
        return found if found is torch.Size or isinstance(found, torch.dtype) else None
    if (module, name) == ("torch.serialization", "_get_layout"):
        import torch.serialization

        return torch.serialization._get_layout
    return None


def read_dcp_metadata(folder: Path, name: str = METADATA_NAME) -> Any:
    """The `Metadata` of a DCP folder, through the restricted unpickler (`UnsafePickleError` otherwise)."""
    path = Path(folder) / name
    return load_restricted(path.read_bytes(), dcp_metadata_global, path, HOLDS)


@functools.cache
def _safe_reader_class() -> type:
    import torch.distributed.checkpoint as dcp
    from torch.distributed.checkpoint.metadata import StorageMeta

    class SafeFileSystemReader(dcp.FileSystemReader):
        """DCP's `FileSystemReader`, reading `.metadata` through the restricted unpickler.

        The folder's metadata is read when the reader is made: `dcp.load` catches any error of
        `read_metadata` and retries with per-rank files, which would hide a refusal behind "file not found"."""

        def __init__(self, path: Path) -> None:
            super().__init__(path)
            self._metadata = read_dcp_metadata(Path(path))

        def read_metadata(self, *args: Any, **kwargs: Any) -> Any:
            if kwargs.get("rank") is None:
                metadata = self._metadata
            else:
                rank_file = Path(self._get_metadata_path(kwargs["rank"]))
                metadata = read_dcp_metadata(rank_file.parent, rank_file.name)
            if getattr(metadata, "storage_meta", None) is None:
                metadata.storage_meta = StorageMeta()
            metadata.storage_meta.load_id = self.load_id
            return metadata

    return SafeFileSystemReader


def safe_reader(folder: Path) -> Any:
    """A `torch.distributed.checkpoint.FileSystemReader` for `folder` that never unpickles code."""
    return _safe_reader_class()(folder)
