"""The checkpoint formats and how a path is recognised as one of them.

Each format's reader and writer module is imported when that format is used (`WRITERS["hf"]`), so opening
a DCP folder imports neither safetensors', zarr's nor torch.save's modules (nor torch: `convert`'s torch-free path).
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Mapping
from pathlib import Path

from ckpt_reshape.errors import ReshapeError
from ckpt_reshape.formats.base import CheckpointReader, CheckpointWriter
from ckpt_reshape.formats.dcp import is_dcp_folder
from ckpt_reshape.formats.torchtitan import is_torchtitan_folder
from ckpt_reshape.megatron_names import is_megatron_folder, resolve_megatron_root
from ckpt_reshape.torchtitan_names import resolve_torchtitan_root
from ckpt_reshape.train_root import resolve_zaya_train_root

FORMATS = ("dcp", "zarr", "hf", "torch", "megatron", "torchtitan")
_CLASSES = {  # format -> (module, reader class, writer class)
    "dcp": ("ckpt_reshape.formats.dcp", "DcpReader", "DcpWriter"),
    "zarr": ("ckpt_reshape.formats.zarr_format", "ZarrReader", "ZarrWriter"),
    "hf": ("ckpt_reshape.formats.hf", "HfReader", "HfWriter"),
    "torch": ("ckpt_reshape.formats.torch_file", "TorchFileReader", "TorchFileWriter"),
    "megatron": ("ckpt_reshape.formats.megatron", "MegatronReader", "MegatronWriter"),
    "torchtitan": ("ckpt_reshape.formats.torchtitan", "TorchtitanReader", "TorchtitanWriter"),
}


class _LazyClasses(Mapping):
    """format -> its reader (`which=1`) or writer (`which=2`) class, its module imported on first use."""

    def __init__(self, which: int) -> None:
        self.which = which

    def __getitem__(self, fmt: str) -> type:
        entry = _CLASSES[fmt]
        return getattr(importlib.import_module(entry[0]), entry[self.which])

    def __iter__(self) -> Iterator[str]:
        return iter(_CLASSES)

    def __len__(self) -> int:
        return len(_CLASSES)


WRITERS: Mapping[str, type[CheckpointWriter]] = _LazyClasses(2)
_READERS: Mapping[str, type[CheckpointReader]] = _LazyClasses(1)


def detect_format(path: Path) -> str:
    """Name of the format stored at `path`; a clear error when it is none of them."""
    path = Path(path)
    if not path.exists():
        raise ReshapeError(f"{path}: no such file or folder")
    if is_megatron_folder(path):  # a DCP folder too: checked first
        return "megatron"
    if is_torchtitan_folder(path):
        return "torchtitan"
    if is_dcp_folder(path):
        return "dcp"
    from ckpt_reshape.formats.hf import is_hf_folder
    from ckpt_reshape.formats.torch_file import is_torch_file
    from ckpt_reshape.formats.zarr_format import is_zarr_folder

    if is_zarr_folder(path):
        return "zarr"
    if is_hf_folder(path) or (path.is_file() and path.suffix == ".safetensors"):
        return "hf"
    if is_torch_file(path):
        return "torch"
    raise ReshapeError(
        f"{path}: unknown checkpoint format; expected a DCP folder (.metadata), a Megatron torch_dist folder (.metadata + metadata.json), a torchtitan step folder, a zarr v3 group (zarr.json), "
        "an HF folder (*.safetensors, model.safetensors.index.json) or a torch.save file"
    )


def open_checkpoint(path: Path, fmt: str | None = None, light: bool = False) -> CheckpointReader:
    """Open any supported checkpoint for reading (format detected unless given). `light`: a plain DCP folder
    opened without importing torch (`convert`'s torch-free path); any other format raises `NeedsTorch`."""
    path = resolve_torchtitan_root(resolve_megatron_root(resolve_zaya_train_root(Path(path))))
    fmt = fmt or detect_format(path)
    if fmt not in _READERS:
        raise ReshapeError(f"unknown format {fmt!r}; choose one of {', '.join(FORMATS)}")
    if light:
        if fmt != "dcp":
            from ckpt_reshape.torch_names import NeedsTorch

            raise NeedsTorch(f"{fmt} sources are read with torch")
        return _READERS[fmt](path, light=True)
    if fmt == "hf" and path.is_file():
        return _READERS[fmt](path.parent)
    return _READERS[fmt](path)


__all__ = ["FORMATS", "WRITERS", "CheckpointReader", "CheckpointWriter", "detect_format", "open_checkpoint"]
