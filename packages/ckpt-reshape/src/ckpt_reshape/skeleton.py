"""The data-less `torch.save` archive of one tensor, written without torch, byte for byte what
`torch.save(torch.empty(shape, dtype), f)` under `torch.serialization.skip_data()` writes.

DCP stores every chunk as such an archive; the DCP writer lays out each piece's archive first and the bytes
are copied into its data record afterwards (`stream_copy`). torch writes the archive with miniz through its
`PyTorchStreamWriter`: stored (uncompressed) records `archive/data.pkl`, `.format_version`,
`.storage_alignment`, `byteorder`, `data/0`, `version`, `.data/serialization_id`, each after a local header
whose `FB` extra field pads its data to 64 bytes, each followed by a data descriptor; then the central
directory and zip64's end records. `serialization_id` combines a hash of the record names (always the same
names here, so a constant) with the records' CRC-32s (`c10::hash_combine`). Records of 4 GiB or more need
zip64 fields this writer does not produce, and torch lays out empty and fp8 tensors otherwise: those raise
`NeedsTorch`, and torch writes them.
"""

from __future__ import annotations

import collections
import functools
import io
import struct
import zlib

from ckpt_reshape.torch_names import STORAGE_CLASSES, NeedsTorch, StorageClass, TorchNamePickler, rebuild_tensor_v2

ALIGNMENT = 64
_PREFIX = "archive/"
_NAME_HASH = "15728199511854643026"  # the combined hash of this archive's record names, as torch computes it
_ZIP32_LIMIT = 0xFFFFFFFF
_MASK64 = (1 << 64) - 1


class _Storage:
    """The storage a tensor's pickle refers to by persistent id."""

    def __init__(self, cls: StorageClass, numel: int) -> None:
        self.cls, self.numel = cls, numel


class _Tensor:
    def __init__(self, shape: tuple[int, ...], storage: _Storage) -> None:
        self.shape, self.storage = shape, storage

    def __reduce_ex__(self, protocol):
        stride, step = [], 1
        for size in reversed(self.shape):
            stride.append(step)
            step *= size
        args = (self.storage, 0, tuple(self.shape), tuple(reversed(stride)), False, collections.OrderedDict())
        return (rebuild_tensor_v2, args)


class _TensorPickler(TorchNamePickler):
    def persistent_id(self, obj):
        if isinstance(obj, _Storage):
            return ("storage", obj.cls, "0", "cpu", obj.numel)
        return None


def _data_pkl(shape: tuple[int, ...], dtype) -> bytes:
    numel = 1
    for size in shape:
        numel *= size
    buffer = io.BytesIO()
    _TensorPickler(buffer, protocol=2).dump(_Tensor(shape, _Storage(STORAGE_CLASSES[dtype.storage], numel)))
    return buffer.getvalue()


def _hash_combine(seed: int, value: int) -> int:
    return (seed ^ ((value + 0x9E3779B9 + (seed << 6) + (seed >> 2)) & _MASK64)) & _MASK64


class _ZipWriter:
    """miniz's stored records as torch writes them: the bytes before the one record left empty, and after it."""

    def __init__(self) -> None:
        self.parts: list[list[bytes]] = [[]]  # before the empty record's data, after it
        self.pos, self.central, self.crcs = 0, [], []

    def record(self, name: str, data: bytes | None, size: int) -> int:
        """Write one record (`data` None: its `size` bytes left for later); returns its data's offset."""
        full = (_PREFIX + name).encode()
        if size >= _ZIP32_LIMIT or self.pos >= _ZIP32_LIMIT:
            raise NeedsTorch(f"record {name} of {size} bytes needs zip64 fields")
        start = self.pos + 30 + len(full) + 4
        padding = -start % ALIGNMENT
        extra = b"FB" + struct.pack("<H", padding) + b"Z" * padding
        crc = zlib.crc32(data) if data is not None else 0
        header = struct.pack("<4sHHHHHIIIHH", b"PK\x03\x04", 0, 0x0808, 0, 0, 0, 0, 0, 0, len(full), len(extra))
        offset = self.pos
        self._write(header + full + extra)
        data_offset = self.pos
        if data is None:
            self.parts.append([])
            self.pos += size
        else:
            self._write(data)
        self._write(struct.pack("<4sIII", b"PK\x07\x08", crc, size, size))
        self.central.append((full, crc, size, offset))
        self.crcs.append(crc)
        return data_offset

    def finish(self) -> None:
        combined = 0
        for crc in self.crcs:
            combined = _hash_combine(combined, crc)
        self.record(".data/serialization_id", f"{_NAME_HASH}{combined:020d}".encode(), 40)
        cd_start = self.pos
        for full, crc, size, offset in self.central:
            fields = (0, 0, 0x0808, 0, 0, 0, crc, size, size, len(full), 0, 0, 0, 0, 0, offset)
            self._write(struct.pack("<4sHHHHHHIIIHHHHHII", b"PK\x01\x02", *fields) + full)
        cd_size, count, zip64_at = self.pos - cd_start, len(self.central), self.pos
        self._write(struct.pack("<4sQHHIIQQQQ", b"PK\x06\x06", 44, 0x031E, 45, 0, 0, count, count, cd_size, cd_start))
        self._write(struct.pack("<4sIQI", b"PK\x06\x07", 0, zip64_at, 1))
        self._write(struct.pack("<4sHHHHIIH", b"PK\x05\x06", 0, 0, count, count, cd_size, cd_start, 0))

    def _write(self, data: bytes) -> None:
        self.parts[-1].append(data)
        self.pos += len(data)


@functools.lru_cache(maxsize=1024)  # a model's tensors come in a few shapes
def _layout(shape: tuple[int, ...], dtype) -> tuple[bytes, int, bytes]:
    """The archive as (bytes before the data, the data's size, bytes after it): it does not depend on where in
    a file it goes (its offsets are the archive's own)."""
    numel = 1
    for size in shape:
        numel *= size
    if numel == 0 or dtype.name.startswith("float8"):  # torch lays these out otherwise (no data; _rebuild_v3)
        raise NeedsTorch(f"a {dtype} tensor of shape {list(shape)}")
    zip_writer = _ZipWriter()
    pkl = _data_pkl(shape, dtype)
    zip_writer.record("data.pkl", pkl, len(pkl))
    zip_writer.record(".format_version", b"1", 1)
    zip_writer.record(".storage_alignment", str(ALIGNMENT).encode(), 2)
    zip_writer.record("byteorder", b"little", 6)
    zip_writer.record("data/0", None, numel * dtype.itemsize)
    zip_writer.record("version", b"3\n", 2)
    zip_writer.finish()
    before, after = (b"".join(part) for part in zip_writer.parts)
    return before, numel * dtype.itemsize, after


def write_skeleton(stream, shape: tuple[int, ...], dtype) -> int:
    """Write the data-less archive of a `shape` tensor of `dtype` (a `torch_names.LightDtype`) at `stream`'s
    position; returns the absolute offset where its data goes (the data bytes are not written)."""
    before, size, after = _layout(tuple(shape), dtype)
    data_offset = stream.tell() + len(before)
    stream.write(before)
    stream.seek(size, io.SEEK_CUR)
    stream.write(after)
    return data_offset
