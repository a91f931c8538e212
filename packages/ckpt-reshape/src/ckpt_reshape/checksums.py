"""Checksums of logical tensors (layout- and format-independent: the hash of the row-major bytes) and entries.

Tensors and entries are hashed with BLAKE3 when the `blake3` package is installed (about five times faster
than sha256 on one core, which matters because every byte of a conversion is hashed), else with sha256.
The sidecar names the algorithm (`checksum_algorithm`); sidecars from before it carry `sha256` per tensor.
Whole files (zaya-train's manifest, `zaya_config.train_checkpoint.manifest`) use sha256, its format's choice.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import TYPE_CHECKING

from ckpt_reshape.errors import ReshapeError

if TYPE_CHECKING:
    import torch

try:
    import blake3 as _blake3
except ImportError:  # optional speed-up; sha256 gives the same guarantees, slower
    _blake3 = None

DEFAULT_ALGORITHM = "blake3" if _blake3 is not None else "sha256"


def new_hasher(algorithm: str = DEFAULT_ALGORITHM):
    """An incremental hasher (`update`, `hexdigest`) for `algorithm` ("blake3" or "sha256")."""
    if algorithm == "sha256":
        return hashlib.sha256()
    if algorithm == "blake3":
        if _blake3 is None:
            raise ReshapeError("this checkpoint's checksums are BLAKE3; pip install blake3 to verify them")
        return _blake3.blake3()
    raise ReshapeError(f"unknown checksum algorithm {algorithm!r}; known: blake3, sha256")


def tensor_checksum(tensor: torch.Tensor, algorithm: str = DEFAULT_ALGORITHM) -> str:
    """Hex digest of the row-major bytes of a tensor (the hashers release the GIL, so this runs beside I/O)."""
    from ckpt_reshape.torch_zip import byte_view

    hasher = new_hasher(algorithm)
    hasher.update(memoryview(byte_view(tensor.contiguous())))
    return hasher.hexdigest()


def bytes_checksum(data: bytes, algorithm: str = DEFAULT_ALGORITHM) -> str:
    """Hex digest of a byte string."""
    hasher = new_hasher(algorithm)
    hasher.update(data)
    return hasher.hexdigest()


def stored_checksum(sidecar: dict | None, entry: dict) -> tuple[str, str] | None:
    """(algorithm, hex digest) a sidecar records for one tensor entry, None when it records none."""
    if "checksum" in entry:
        return (sidecar or {}).get("checksum_algorithm", "sha256"), entry["checksum"]
    if "sha256" in entry:
        return "sha256", entry["sha256"]
    return None


class RecordedChecksums:
    """The checksums a source's sidecar recorded when ckpt-reshape wrote it, checked against what a conversion
    computes while it reads: a corrupt byte or a deleted zarr chunk (which zarr reads back as zeros) stops the
    conversion instead of being copied into the output."""

    def __init__(self, sidecar: dict | None, path: Path) -> None:
        self.sidecar, self.path = sidecar or {}, path
        self.object_algorithm = self.sidecar.get("checksum_algorithm", "sha256")

    def check_tensor(self, name: str, digest: str) -> None:
        """Raise if tensor `name`'s bytes (hashed with DEFAULT_ALGORITHM) differ from what was recorded."""
        recorded = stored_checksum(self.sidecar, self.sidecar.get("tensors", {}).get(name, {}))
        self._check(f"tensor {name!r}", recorded, digest)

    def check_object(self, name: str, digest: str) -> None:
        """Raise if entry `name`'s bytes (hashed with DEFAULT_ALGORITHM) differ from what was recorded."""
        recorded = self.sidecar.get("objects", {}).get(name)
        self._check(f"entry {name!r}", recorded and (self.object_algorithm, recorded), digest)

    def _check(self, what: str, recorded: tuple[str, str] | None, digest: str) -> None:
        # a sidecar hashed with another algorithm (sha256 from before BLAKE3) is left to `zaya ckpt verify`
        if recorded and recorded[0] == DEFAULT_ALGORITHM and recorded[1] != digest:
            raise ReshapeError(
                f"{self.path}: {what} differs from the {recorded[0]} checksum recorded when it was written "
                f"(corrupt, truncated or missing data); nothing was written. `zaya ckpt verify {self.path}` "
                "lists every damaged entry"
            )
