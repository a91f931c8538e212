"""Read and write `torch.save` archives one tensor at a time, with the bytes going straight to and from disk.

`torch.load` materialises a whole archive (or maps it, which leaves every touched page resident), so a
converter built on it needs memory for the whole checkpoint. Here the archive's `data.pkl` is unpickled by a
restricted unpickler that turns each tensor into a `LazyTensor` (storage record + offset + size + stride);
its bytes are read with `preadv` into a tensor only when asked for. Writing goes the other way round:
`torch.save` runs under `torch.serialization.skip_data` on uninitialised placeholders (which reserves the
records without touching memory), then each tensor's bytes are `pwrite`n into its record. The result is an
ordinary archive that `torch.load` reads. DCP stores each chunk as such an archive inside a `.distcp` file,
so the same code serves both formats through a file *window* (start, length).
"""

from __future__ import annotations

import collections
import io
import os
import pickle
import struct
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ckpt_reshape.byte_ranges import Extent
from ckpt_reshape.errors import ReshapeError
from ckpt_reshape.torch_names import DTYPES, STORAGE_DTYPES, NeedsTorch, Size

if TYPE_CHECKING:
    import torch

IO_CHUNK_BYTES = 64 << 20  # one preadv/pwrite call; below Linux's 2 GiB single-call limit


class UnsupportedPickle(Exception):
    """The archive's pickle references a class this reader does not rebuild lazily."""


@dataclass(frozen=True)
class StorageRef:
    """A storage record `data/<key>` of an archive."""

    key: str
    dtype: torch.dtype
    numel: int


@dataclass(frozen=True)
class LazyTensor:
    """A tensor whose bytes are still on disk."""

    storage: StorageRef
    storage_offset: int
    shape: tuple[int, ...]
    stride: tuple[int, ...]

    @property
    def dtype(self) -> torch.dtype:
        """Element type."""
        return self.storage.dtype

    def is_contiguous(self) -> bool:
        """Whether the bytes form one dense row-major run."""
        expected, stride = 1, []
        for size in reversed(self.shape):
            stride.append(expected)
            expected *= size
        return all(s == e or size == 1 for s, e, size in zip(self.stride, reversed(stride), self.shape, strict=True))


def _rebuild_lazy(storage, storage_offset, size, stride, requires_grad=False, backward_hooks=None, metadata=None):
    return LazyTensor(storage, int(storage_offset), tuple(size), tuple(stride))


def _rebuild_parameter(data, requires_grad=False, backward_hooks=None, *args):
    return data


class _StorageType:
    def __init__(self, dtype: torch.dtype) -> None:
        self.dtype = dtype


class _LazyUnpickler(pickle.Unpickler):
    """Rebuilds plain containers, numbers, strings and tensors only (a strict subset of weights_only).

    `light`: dtypes and sizes as `torch_names`' stand-ins, without importing torch (`NeedsTorch` for a torch
    name they lack)."""

    def __init__(self, file, light: bool = False) -> None:
        super().__init__(file)
        self.light = light

    def find_class(self, module: str, name: str):
        if module == "torch._utils" and name == "_rebuild_tensor_v2":
            return _rebuild_lazy
        if module == "torch._utils" and name == "_rebuild_parameter":
            return _rebuild_parameter
        if module == "collections" and name == "OrderedDict":
            return collections.OrderedDict
        if module == "torch" and name.endswith("Storage"):
            return _StorageType(self._dtype("uint8" if name == "UntypedStorage" else _storage_dtype(name)))
        if module == "torch" and self.light:
            found = Size if name == "Size" else DTYPES.get(name)
            if found is None:
                raise NeedsTorch(f"torch.{name}")
            return found
        if module == "torch":
            import torch

            if name == "Size":
                return torch.Size
            if isinstance(getattr(torch, name, None), torch.dtype):
                return getattr(torch, name)
        raise UnsupportedPickle(f"{module}.{name}")

    def _dtype(self, name: str):
        if self.light:
            return DTYPES[name]
        import torch

        return getattr(torch, name)

    def persistent_load(self, pid):
        typename, storage_type, key, _location, numel = pid
        if typename != "storage":
            raise UnsupportedPickle(f"persistent id {typename!r}")
        return StorageRef(str(key), storage_type.dtype, int(numel))


def _storage_dtype(name: str) -> str:
    """The dtype name of a legacy storage class (`FloatStorage`: float32)."""
    try:
        return STORAGE_DTYPES[name].name
    except KeyError:
        raise UnsupportedPickle(f"torch.{name}") from None


class _Window(io.RawIOBase):
    """A read-only, seekable view of `[start, start + length)` of an open file descriptor."""

    def __init__(self, fd: int, start: int, length: int) -> None:
        self._fd, self._start, self._length, self._pos = fd, start, length, 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._pos

    def seek(self, pos: int, whence: int = 0) -> int:
        base = {0: 0, 1: self._pos, 2: self._length}[whence]
        self._pos = max(0, base + pos)
        return self._pos

    def readinto(self, buffer) -> int:
        want = max(0, min(len(buffer), self._length - self._pos))
        data = os.pread(self._fd, want, self._start + self._pos)
        buffer[: len(data)] = data
        self._pos += len(data)
        return len(data)


class TorchArchive:
    """One `torch.save` archive at `[start, start + length)` of `path` (the whole file by default)."""

    def __init__(self, path: Path, start: int = 0, length: int | None = None, fd: int | None = None) -> None:
        self.path = Path(path)
        self._own_fd = fd is None
        self.fd = os.open(self.path, os.O_RDONLY) if fd is None else fd
        self.start = start
        self.length = os.fstat(self.fd).st_size - start if length is None else length
        self.records: dict[str, tuple[int, int]] = {}  # record name (after the archive prefix) -> (offset, size)
        self._pickle = b""
        try:
            with zipfile.ZipFile(_Window(self.fd, start, self.length)) as archive:
                for info in archive.infolist():
                    _, _, rest = info.filename.partition("/")
                    if info.compress_type != zipfile.ZIP_STORED:
                        raise ReshapeError(f"{self.path}: record {info.filename} is compressed; not a torch.save file")
                    self.records[rest] = (self._data_offset(info.header_offset, info.filename), info.file_size)
                    if rest == "data.pkl":
                        self._pickle = archive.read(info.filename)
        except (zipfile.BadZipFile, OSError, struct.error, EOFError) as err:
            self.close()
            raise ReshapeError(
                f"{self.path}: bytes {start}..{start + self.length} are not a readable torch.save archive "
                f"({err}); the file is truncated or corrupt"
            ) from err
        if "data.pkl" not in self.records:
            self.close()
            raise ReshapeError(f"{self.path}: torch.save archive without data.pkl (truncated or corrupt)")

    def _data_offset(self, header_offset: int, filename: str) -> int:
        header = os.pread(self.fd, 30, self.start + header_offset)
        if len(header) < 30 or header[:4] != b"PK\x03\x04":
            raise zipfile.BadZipFile(f"bad local header for {filename}")
        name_len, extra_len = struct.unpack("<HH", header[26:30])
        return self.start + header_offset + 30 + name_len + extra_len

    def structure(self, light: bool = False):
        """The unpickled object with every tensor as a `LazyTensor` (raises `UnsupportedPickle`); `light`:
        without importing torch (dtypes as `torch_names.LightDtype`)."""
        return _LazyUnpickler(io.BytesIO(self._pickle), light).load()

    def read(self, lazy: LazyTensor, out: torch.Tensor | None = None) -> torch.Tensor:
        """Materialise one tensor, into `out` when given (same shape and dtype)."""
        import torch

        record = self.records.get(f"data/{lazy.storage.key}")
        if record is None:
            raise ReshapeError(f"{self.path}: storage record data/{lazy.storage.key} is missing (truncated file?)")
        offset, size = record
        item = lazy.dtype.itemsize
        numel = 1
        for s in lazy.shape:
            numel *= s
        if lazy.is_contiguous():
            if (lazy.storage_offset + numel) * item > size:
                raise ReshapeError(f"{self.path}: record data/{lazy.storage.key} is shorter than its tensor")
            target = out if out is not None and out.is_contiguous() else torch.empty(lazy.shape, dtype=lazy.dtype)
            pread_into(self.fd, offset + lazy.storage_offset * item, target, self.path)
        else:
            flat = torch.empty(size // item, dtype=lazy.dtype)
            pread_into(self.fd, offset, flat, self.path)
            target = flat.as_strided(lazy.shape, lazy.stride, lazy.storage_offset).clone()
        if out is not None and target is not out:
            out.copy_(target)
            return out
        return target

    def extent(self, lazy: LazyTensor) -> Extent | None:
        """The file range holding a contiguous tensor's bytes (None when it is a strided view)."""
        record = self.records.get(f"data/{lazy.storage.key}")
        if record is None:
            raise ReshapeError(f"{self.path}: storage record data/{lazy.storage.key} is missing (truncated file?)")
        if not lazy.is_contiguous():
            return None
        offset, size = record
        nbytes = lazy.dtype.itemsize
        for s in lazy.shape:
            nbytes *= s
        start = lazy.storage_offset * lazy.dtype.itemsize
        if start + nbytes > size:
            raise ReshapeError(f"{self.path}: record data/{lazy.storage.key} is shorter than its tensor")
        return Extent(self.fd, offset + start, nbytes, self.path)

    def close(self) -> None:
        """Release the file descriptor (if this archive opened it)."""
        if self._own_fd and self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


def byte_view(tensor: torch.Tensor):
    """A writable numpy uint8 view of a contiguous tensor's bytes (no copy)."""
    import torch

    return tensor.reshape(-1).view(torch.uint8).numpy()


def pread_into(fd: int, offset: int, tensor: torch.Tensor, path: Path) -> None:
    """Fill a contiguous tensor from the file at `offset`; a short read is a truncated-file `ReshapeError`."""
    buffer = memoryview(byte_view(tensor))
    done = 0
    while done < len(buffer):
        got = os.preadv(fd, [buffer[done : done + IO_CHUNK_BYTES]], offset + done)
        if got <= 0:
            raise ReshapeError(
                f"{path}: file ends at byte {offset + done}, expected {len(buffer) - done} more (truncated)"
            )
        done += got


def pwrite_from(fd: int, offset: int, tensor: torch.Tensor) -> None:
    """Write a tensor's bytes at `offset` (a contiguous copy is made only for non-contiguous views)."""
    buffer = memoryview(byte_view(tensor.contiguous()))
    done = 0
    while done < len(buffer):
        done += os.pwrite(fd, buffer[done : done + IO_CHUNK_BYTES], offset + done)


def placeholder(shape: tuple[int, ...], dtype: torch.dtype) -> torch.Tensor:
    """An uninitialised tensor: its pages are never touched, so it costs address space, not memory."""
    import torch

    return torch.empty(shape, dtype=dtype)


def walk(obj, path: tuple = ()) -> Iterator[tuple[tuple, object]]:
    """Leaves of nested dicts / lists / tuples with their key paths, in pickling order."""
    if isinstance(obj, dict):
        for key, value in obj.items():
            yield from walk(value, (*path, key))
    elif isinstance(obj, list | tuple):
        for i, value in enumerate(obj):
            yield from walk(value, (*path, i))
    else:
        yield path, obj


def save_skeleton(obj, stream, path: Path) -> dict[tuple, int]:
    """`torch.save` `obj` (tensors as placeholders) without data; return each tensor path's data offset.

    `stream` is an open binary file positioned where the archive should start; offsets are absolute.
    """
    import torch

    start = stream.tell()
    with torch.serialization.skip_data():
        torch.save(obj, stream)
    stream.flush()
    length = stream.tell() - start
    archive = TorchArchive(path, start, length, fd=stream.fileno())
    offsets: dict[tuple, int] = {}
    for key, leaf in walk(archive.structure()):
        if isinstance(leaf, LazyTensor):
            offsets[key] = archive.records[f"data/{leaf.storage.key}"][0] + leaf.storage_offset * leaf.dtype.itemsize
    return offsets
