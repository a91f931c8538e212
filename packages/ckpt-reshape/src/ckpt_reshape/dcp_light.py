"""DCP's `.metadata` without torch: stand-ins for torch.distributed.checkpoint's metadata classes, read through
the restricted unpickler and written as the very bytes `pickle.dump` of torch's own classes gives.

Each stand-in has its torch class's fields in the same order, and pickles the same way (`__dict__`, or
`TensorProperties`' tuple state and `_StorageInfo`'s dict without the `None` fields), so `dump_metadata` of a
stand-in `Metadata` equals `pickle.dump` of torch's (`torch_names.TorchNamePickler` writes the globals). They
hold only what `formats/dcp.py` reads and writes; a `.metadata` naming anything else of torch's reads as
`NeedsTorch`, and the conversion runs on torch's classes instead.
"""

from __future__ import annotations

import enum
import pickle
from pathlib import Path

from zaya_config.safe_pickle import load_restricted
from zaya_config.train_checkpoint.dcp_metadata import HOLDS, METADATA_NAME, dcp_metadata_global

from ckpt_reshape.torch_names import DTYPES, NeedsTorch, Size, TorchNamePickler, register

_MD = "torch.distributed.checkpoint.metadata"  # one string object for every class of the module, as in torch
_FS = "torch.distributed.checkpoint.filesystem"


class _Layout:
    """`torch.strided` (the layout DCP records for every tensor, a deprecated field)."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __reduce__(self):
        return (_get_layout, (self.name,))


STRIDED = _Layout("torch.strided")


def _get_layout(name: str) -> _Layout:
    return STRIDED if name == STRIDED.name else _Layout(name)


class _MEM_FORMAT_ENCODING(enum.Enum):
    TORCH_CONTIGUOUS_FORMAT = 0
    TORCH_CHANNELS_LAST = 1
    TORCH_PRESERVE_FORMAT = 2


class MetadataIndex:
    """A key of `storage_data`: a tensor chunk (fqn, offsets) or an entry (fqn); `index` is only a hint."""

    offset = None

    def __init__(self, fqn: str, offset=None, index: int | None = None) -> None:
        self.fqn = fqn
        self.index = index
        if offset is not None:
            self.offset = Size(offset)

    def __eq__(self, other) -> bool:
        return isinstance(other, MetadataIndex) and (self.fqn, self.offset) == (other.fqn, other.offset)

    def __hash__(self) -> int:
        return hash((self.fqn, self.offset))


class TensorProperties:
    """A tensor's dtype (the other fields are deprecated; DCP writes their defaults)."""

    def __init__(self, dtype=None, layout=STRIDED, requires_grad=False, memory_format=None, pin_memory=False):
        self.dtype, self.layout, self.requires_grad = dtype, layout, requires_grad
        self.memory_format = memory_format or _MEM_FORMAT_ENCODING.TORCH_CONTIGUOUS_FORMAT
        self.pin_memory = pin_memory

    def __getstate__(self):
        return (self.dtype, self.layout, self.requires_grad, self.memory_format, self.pin_memory)

    def __setstate__(self, state) -> None:
        self.dtype, self.layout, self.requires_grad, self.memory_format, self.pin_memory = state


class ChunkStorageMetadata:
    def __init__(self, offsets, sizes) -> None:
        self.offsets, self.sizes = offsets, sizes


class TensorStorageMetadata:
    def __init__(self, properties, size, chunks) -> None:
        self.properties, self.size, self.chunks = properties, size, chunks


class BytesStorageMetadata:
    pass


class StorageMeta:
    def __init__(self, checkpoint_id=None, save_id=None, load_id=None, modules=None) -> None:
        self.checkpoint_id, self.save_id, self.load_id = checkpoint_id, save_id, load_id
        self.modules = [] if modules is None else modules


class Metadata:
    def __init__(self, state_dict_metadata, planner_data=None, storage_data=None, storage_meta=None, version=None):
        self.state_dict_metadata, self.planner_data, self.storage_data = state_dict_metadata, planner_data, storage_data
        self.storage_meta, self.version = storage_meta, version


class _StorageInfo:
    """Where an entry's bytes are: file, offset, length."""

    transform_descriptors = None

    def __init__(self, relative_path: str, offset: int, length: int, transform_descriptors=None) -> None:
        self.relative_path, self.offset, self.length = relative_path, offset, length
        self.transform_descriptors = transform_descriptors

    def __getstate__(self):
        return {k: v for k, v in self.__dict__.items() if v is not None}


_CLASSES = {
    (_MD, cls.__name__): cls
    for cls in (
        MetadataIndex,
        TensorProperties,
        ChunkStorageMetadata,
        TensorStorageMetadata,
        BytesStorageMetadata,
        StorageMeta,
        Metadata,
        _MEM_FORMAT_ENCODING,
    )
}
_CLASSES[_FS, "_StorageInfo"] = _StorageInfo
_CLASSES["torch.serialization", "_get_layout"] = _get_layout
_CLASSES["torch", "Size"] = Size
for (_module, _name), _obj in _CLASSES.items():
    if _module != "torch":
        register(_obj, _module, _name)
for _dtype in DTYPES.values():
    _CLASSES["torch", _dtype.name] = _dtype


class _Unknown:
    """What a torch global the stand-ins lack unpickles to; `read_metadata` then raises `NeedsTorch`."""

    def __init__(self, *args, **kwargs) -> None:
        pass

    def __setstate__(self, state) -> None:
        pass


def read_metadata(folder: Path, name: str = METADATA_NAME) -> Metadata:
    """A DCP folder's `.metadata` as stand-ins, through the same restricted unpickler as torch's classes
    (`zaya_config.train_checkpoint.dcp_metadata`: the same refusals); `NeedsTorch` when it names another of
    torch's classes."""
    unknown: list[str] = []

    def allow(module: str, global_name: str) -> object | None:
        found = _CLASSES.get((module, global_name))
        if found is not None:
            return found
        if module == "torch" or module.startswith("torch."):
            unknown.append(f"{module}.{global_name}")
            return _Unknown
        return dcp_metadata_global(module, global_name)  # plain stdlib names; None refuses the rest

    path = Path(folder) / name
    metadata = load_restricted(path.read_bytes(), allow, path, HOLDS)
    if unknown:
        raise NeedsTorch(f"{path} names {', '.join(sorted(set(unknown)))}")
    return metadata


def dump_metadata(metadata: Metadata, stream) -> None:
    """Write `metadata` as `pickle.dump` of torch's classes would."""
    TorchNamePickler(stream, protocol=pickle.DEFAULT_PROTOCOL).dump(metadata)
