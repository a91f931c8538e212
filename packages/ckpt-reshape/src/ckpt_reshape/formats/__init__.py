"""The checkpoint formats and how a path is recognised as one of them."""

from __future__ import annotations

from pathlib import Path

from ckpt_reshape.errors import ReshapeError
from ckpt_reshape.formats.base import CheckpointReader, CheckpointWriter
from ckpt_reshape.formats.dcp import DcpReader, DcpWriter, is_dcp_folder
from ckpt_reshape.formats.hf import HfReader, HfWriter, is_hf_folder
from ckpt_reshape.formats.megatron import MegatronReader, MegatronWriter
from ckpt_reshape.formats.torch_file import TorchFileReader, TorchFileWriter, is_torch_file
from ckpt_reshape.formats.torchtitan import TorchtitanReader, TorchtitanWriter, is_torchtitan_folder
from ckpt_reshape.formats.zarr_format import ZarrReader, ZarrWriter, is_zarr_folder
from ckpt_reshape.megatron_names import is_megatron_folder, resolve_megatron_root
from ckpt_reshape.torchtitan_names import resolve_torchtitan_root
from ckpt_reshape.train_root import resolve_zaya_train_root

FORMATS = ("dcp", "zarr", "hf", "torch", "megatron", "torchtitan")
WRITERS: dict[str, type[CheckpointWriter]] = {
    "dcp": DcpWriter,
    "zarr": ZarrWriter,
    "hf": HfWriter,
    "torch": TorchFileWriter,
    "megatron": MegatronWriter,
    "torchtitan": TorchtitanWriter,
}
_READERS: dict[str, type[CheckpointReader]] = {
    "dcp": DcpReader,
    "zarr": ZarrReader,
    "hf": HfReader,
    "torch": TorchFileReader,
    "megatron": MegatronReader,
    "torchtitan": TorchtitanReader,
}


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


def open_checkpoint(path: Path, fmt: str | None = None) -> CheckpointReader:
    """Open any supported checkpoint for reading (format detected unless given)."""
    path = resolve_torchtitan_root(resolve_megatron_root(resolve_zaya_train_root(Path(path))))
    fmt = fmt or detect_format(path)
    if fmt not in _READERS:
        raise ReshapeError(f"unknown format {fmt!r}; choose one of {', '.join(FORMATS)}")
    if fmt == "hf" and path.is_file():
        return HfReader(path.parent)
    return _READERS[fmt](path)


__all__ = ["FORMATS", "WRITERS", "CheckpointReader", "CheckpointWriter", "detect_format", "open_checkpoint"]
