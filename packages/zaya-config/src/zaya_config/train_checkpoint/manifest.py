"""The manifest of a checkpoint step folder: every file's size and sha256, so a resume can prove it is whole.

A SIGKILL during a save, a full disk or a bad copy leaves files that `torch.load` may still read
without complaint (a truncated shard can deserialize into garbage); checking size and hash first turns
that into a clear "this file is bad, using the previous checkpoint". The file is JSON with one-space
indents and sorted keys: `{"created_unix", "files": {relative path: {"sha256", "size_bytes"}}, "format",
"step", "world_size"}`, format `zaya-train-checkpoint/1`, and, for a checkpoint whose tensors are split other
than by data parallelism alone, `"layout"`: the parallel layout that wrote it in ckpt-reshape's `ParallelLayout`
keys (`{"dp": 4, "ep": 2, "fsdp": false}`: 4 ranks, the experts split over EP groups of 2), which ckpt-reshape
reads instead of guessing it from the world size (an older manifest without it is data parallel).
"""

import hashlib
import json
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from zaya_config.atomic import write_text_atomic

MANIFEST_NAME = "manifest.json"
MANIFEST_FORMAT = "zaya-train-checkpoint/1"
_CHUNK_BYTES = 8 << 20


def sha256_file(path: Path) -> str:
    """Hex sha256 of a file, read in chunks so large shards do not load into memory."""
    digest = hashlib.sha256()
    with open(path, "rb") as stream:
        while chunk := stream.read(_CHUNK_BYTES):
            digest.update(chunk)
    return digest.hexdigest()


@dataclass(frozen=True)
class ManifestProblem:
    """Why a checkpoint folder failed verification: the offending file and what is wrong with it."""

    path: Path
    reason: str

    def __str__(self) -> str:
        return f"{self.path}: {self.reason}"


def write_manifest(
    folder: Path, step: int, world_size: int, *, durable: bool = True, layout: dict | None = None
) -> dict:
    """Hash every file under `folder` and write `manifest.json` there atomically; return the manifest.

    `layout`: the parallel layout to record (module docstring), or None for none."""
    folder = Path(folder)
    files = {}
    for path in sorted(p for p in folder.rglob("*") if p.is_file() and p.name != MANIFEST_NAME):
        files[path.relative_to(folder).as_posix()] = {"size_bytes": path.stat().st_size, "sha256": sha256_file(path)}
    manifest = {
        "format": MANIFEST_FORMAT,
        "step": step,
        "world_size": world_size,
        "created_unix": time.time(),
        "files": files,
    }
    if layout is not None:
        manifest["layout"] = dict(layout)
    write_text_atomic(folder / MANIFEST_NAME, json.dumps(manifest, indent=1, sort_keys=True), durable=durable)
    return manifest


def read_manifest(folder: Path) -> dict:
    """Parse a folder's manifest (raises OSError or ValueError when missing or unreadable)."""
    manifest = json.loads((Path(folder) / MANIFEST_NAME).read_text(encoding="utf-8"))
    if not isinstance(manifest, dict) or manifest.get("format") != MANIFEST_FORMAT:
        raise ValueError(f"not a {MANIFEST_FORMAT} manifest")
    if not isinstance(manifest.get("files"), dict):
        raise ValueError(f"not a {MANIFEST_FORMAT} manifest (no `files` table)")
    return manifest


def find_manifest(folder: Path) -> dict | None:
    """The manifest of a step folder, None when the folder has no readable one (it is not a zaya-train step)."""
    try:
        return read_manifest(folder)
    except (OSError, ValueError):
        return None


def manifest_problems(folder: Path, manifest: dict) -> Iterator[ManifestProblem]:
    """Each file the manifest lists that is missing, of another size or of another sha256, lazily in name order."""
    for rel, entry in sorted(manifest["files"].items()):
        path = Path(folder) / rel
        if not path.is_file():
            yield ManifestProblem(path, "listed in the manifest but missing")
            continue
        size = path.stat().st_size
        if size != entry["size_bytes"]:
            yield ManifestProblem(path, f"size {size} bytes, manifest says {entry['size_bytes']} (truncated?)")
        elif sha256_file(path) != entry["sha256"]:
            yield ManifestProblem(path, "sha256 differs from the manifest (corrupt)")


def verify_manifest(folder: Path) -> ManifestProblem | None:
    """Check every file listed in the manifest (present, same size, same sha256); None when all are good."""
    try:
        manifest = read_manifest(folder)
    except (OSError, ValueError) as err:
        return ManifestProblem(Path(folder) / MANIFEST_NAME, f"missing or unreadable manifest ({err})")
    return next(manifest_problems(folder, manifest), None)
