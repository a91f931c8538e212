"""zaya-train's `manifest.json` (size + sha256 of every file in a step folder), read and rewritten here so a
reshaped zaya-train checkpoint passes the trainer's own integrity check on resume. The format string and
fields follow `zaya_train.checkpoint.manifest`; ckpt-reshape does not import zaya-train.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from ckpt_reshape.checksums import file_sha256

MANIFEST_NAME = "manifest.json"
MANIFEST_FORMAT = "zaya-train-checkpoint/1"


def read_train_manifest(folder: Path) -> dict | None:
    """The zaya-train manifest of a step folder, None when the folder is not a zaya-train checkpoint."""
    path = Path(folder) / MANIFEST_NAME
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except ValueError:
        return None
    return data if data.get("format") == MANIFEST_FORMAT and isinstance(data.get("files"), dict) else None


def write_train_manifest(folder: Path, step: int, world_size: int, durable: bool = True) -> None:
    """Hash every file in `folder` and write the manifest (fsynced when `durable`; the folder is renamed into place
    later)."""
    files = {}
    for path in sorted(p for p in folder.rglob("*") if p.is_file() and p.name != MANIFEST_NAME):
        files[path.relative_to(folder).as_posix()] = {"size_bytes": path.stat().st_size, "sha256": file_sha256(path)}
    manifest = {
        "format": MANIFEST_FORMAT,
        "step": step,
        "world_size": world_size,
        "created_unix": time.time(),
        "files": files,
    }
    with open(folder / MANIFEST_NAME, "w", encoding="utf-8") as stream:
        stream.write(json.dumps(manifest, indent=1, sort_keys=True))
        stream.flush()
        if durable:
            os.fsync(stream.fileno())


def check_train_manifest(folder: Path, manifest: dict) -> list[str]:
    """Problems found re-hashing the files a manifest lists (empty when all match)."""
    problems = []
    for rel, entry in sorted(manifest["files"].items()):
        path = Path(folder) / rel
        if not path.is_file():
            problems.append(f"{path}: listed in {MANIFEST_NAME} but missing")
        elif path.stat().st_size != entry["size_bytes"]:
            problems.append(
                f"{path}: {path.stat().st_size} bytes, {MANIFEST_NAME} says {entry['size_bytes']} (truncated?)"
            )
        elif file_sha256(path) != entry["sha256"]:
            problems.append(f"{path}: sha256 differs from {MANIFEST_NAME} (corrupt)")
    return problems
