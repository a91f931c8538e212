"""Checksums: sha256 of a logical tensor's bytes (layout- and format-independent) and of whole files."""

from __future__ import annotations

import hashlib
from pathlib import Path

import torch

from ckpt_reshape.torch_zip import byte_view

_FILE_CHUNK = 8 << 20


def tensor_sha256(tensor: torch.Tensor) -> str:
    """Hex sha256 of the row-major bytes of a tensor (hashlib releases the GIL, so this runs beside I/O)."""
    return hashlib.sha256(memoryview(byte_view(tensor.contiguous()))).hexdigest()


def bytes_sha256(data: bytes) -> str:
    """Hex sha256 of a byte string."""
    return hashlib.sha256(data).hexdigest()


def file_sha256(path: Path) -> str:
    """Hex sha256 of a file read in chunks."""
    digest = hashlib.sha256()
    with open(path, "rb") as stream:
        while chunk := stream.read(_FILE_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()
