"""Expensive test artefacts (a Verilator model, a trained tiny run dir, the tiny manta world) built once and
shared: every test process of a session, and later sessions, reuse one copy cached under `.cache/tests/`.

An artefact is a folder named by its kind and the content hash of everything it is built from (sources,
configs, tool versions): change an input and the next run builds a new folder, so a stale copy is never used.
The build runs under an inter-process lock (pytest-xdist workers wait for the one that builds) into a
temporary folder that is renamed into place only when complete, so a killed build leaves nothing half-written.
CI starts with an empty `.cache/`; `make clean` removes it. `ZAYA_TEST_CACHE` moves the cache elsewhere.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
from collections.abc import Callable, Iterable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def cache_root() -> Path:
    """Where cached artefacts live: `$ZAYA_TEST_CACHE`, else `.cache/tests/` in the checkout."""
    return Path(os.environ.get("ZAYA_TEST_CACHE") or REPO / ".cache" / "tests")


def content_hash(*inputs: str | bytes | Path | Iterable[Path]) -> str:
    """A short sha256 over strings, bytes and files (a folder: every file under it, by relative path)."""
    digest = hashlib.sha256()

    def add_file(path: Path, label: str) -> None:
        digest.update(label.encode() + b"\0")
        digest.update(path.read_bytes())

    for item in inputs:
        if isinstance(item, bytes):
            digest.update(b"b" + item)
        elif isinstance(item, str):
            digest.update(b"s" + item.encode())
        elif isinstance(item, Path):
            if item.is_dir():
                for path in sorted(p for p in item.rglob("*") if p.is_file() and "__pycache__" not in p.parts):
                    add_file(path, str(path.relative_to(item)))
            else:
                add_file(item, item.name)
        else:
            for path in sorted(item):
                add_file(path, str(path))
        digest.update(b"\1")
    return digest.hexdigest()[:16]


def cached_artifact(kind: str, key: str, build: Callable[[Path], None]) -> Path:
    """The folder `<cache>/<kind>-<key>/`, built by `build(folder)` the first time any process asks for it.

    `build` fills an empty folder; it may raise, and then nothing is cached and the error propagates."""
    root = cache_root()
    root.mkdir(parents=True, exist_ok=True)
    final = root / f"{kind}-{key}"
    if final.is_dir():
        return final
    with open(root / f"{kind}-{key}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if final.is_dir():  # another process built it while this one waited
            return final
        partial = root / f".{kind}-{key}.partial-{os.getpid()}"
        shutil.rmtree(partial, ignore_errors=True)
        partial.mkdir()
        try:
            build(partial)
            os.rename(partial, final)
        finally:
            shutil.rmtree(partial, ignore_errors=True)
    return final
