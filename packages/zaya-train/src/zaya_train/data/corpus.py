"""Text sources as lists of documents (one file = one document), including the embedded default corpus:
the Python standard library sources of the running interpreter, present on every machine that runs us.
"""

import fnmatch
import hashlib
import math
import os
import sysconfig
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from zaya_train.config import STDLIB, SourceConfig
from zaya_train.errors import ZayaTrainError


def stdlib_root() -> Path:
    """The folder holding the running interpreter's standard library sources."""
    return Path(sysconfig.get_paths()["stdlib"])


@dataclass(frozen=True)
class Document:
    """One text document: a stable name (relative path, used for the validation split) and its file."""

    name: str
    path: Path

    def read(self) -> str:
        """The document's text (undecodable bytes replaced, so odd files never stop a run)."""
        return self.path.read_text(encoding="utf-8", errors="replace")


def _anchored(pattern: str) -> str:
    """An exclude pattern as matched against "/" + a relative path: a bare one is anchored at the root."""
    return pattern if pattern.startswith(("/", "*")) else "/" + pattern


def _excluded(rel: str, patterns: list[str]) -> bool:
    return any(fnmatch.fnmatch("/" + rel, _anchored(pattern)) for pattern in patterns)


def _dir_may_hold(dir_parts: tuple[str, ...], pattern: tuple[str, ...]) -> bool:
    """Whether files under a folder (its parts relative to the root) can match the glob's parts."""
    if not dir_parts:
        return bool(pattern)
    if not pattern or pattern[0] == "**":
        return bool(pattern)
    if len(pattern) == 1:  # the last part names the file itself, not a folder
        return False
    return fnmatch.fnmatchcase(dir_parts[0], pattern[0]) and _dir_may_hold(dir_parts[1:], pattern[1:])


def _file_matches(parts: tuple[str, ...], pattern: tuple[str, ...]) -> bool:
    """pathlib's glob for one file: `**` is zero or more folders, other parts match one name each."""
    if not pattern:
        return not parts
    if pattern[0] == "**":
        return len(pattern) > 1 and any(_file_matches(parts[i:], pattern[1:]) for i in range(len(parts)))
    return bool(parts) and fnmatch.fnmatchcase(parts[0], pattern[0]) and _file_matches(parts[1:], pattern[1:])


def _excludes_whole_folder(rel_dir: str, patterns: list[str]) -> bool:
    """A `.../**` exclude that matches the folder itself excludes every file under it: skip the walk there."""
    anchored = (_anchored(pattern) for pattern in patterns)
    return any(p.endswith("/**") and fnmatch.fnmatch("/" + rel_dir, p[:-3]) for p in anchored)


def _matching_files(root: Path, glob: str, exclude: list[str]) -> Iterator[Path]:
    """The files `root.glob(glob)` finds that no exclude pattern names, without walking excluded folders:
    the default corpus's glob covers the interpreter's whole library, site-packages (10x the rest) included."""
    pattern = tuple(part for part in glob.split("/") if part not in ("", "."))
    for folder, dirs, files in os.walk(root):
        rel = Path(folder).relative_to(root)
        dirs[:] = [
            d
            for d in dirs
            if _dir_may_hold((*rel.parts, d), pattern) and not _excludes_whole_folder((rel / d).as_posix(), exclude)
        ]
        for name in files:
            parts = (*rel.parts, name)
            if _file_matches(parts, pattern) and not _excluded("/".join(parts), exclude):
                yield Path(folder, name)


def list_documents(source: SourceConfig, key: str = "source") -> list[Document]:
    """The documents of a text source, sorted by name; a clear error if there are none."""
    root = stdlib_root() if source.path == STDLIB else Path(source.path).expanduser()
    if not root.exists():
        raise ZayaTrainError(
            f"data source {key}: path {root} does not exist; point it at a text file, a folder "
            f"of text files, a prepared .zarr shard, a Megatron prefix (PREFIX.bin + PREFIX.idx), or use {STDLIB!r}"
        )
    if root.is_file():
        docs = [Document(root.name, root)]
    else:
        paths = sorted(_matching_files(root, source.glob, list(source.exclude)))
        docs = [Document(p.relative_to(root).as_posix(), p) for p in paths]
    docs = [d for d in docs if d.path.stat().st_size > 0]
    if not docs:
        raise ZayaTrainError(
            f"data source {key}: no non-empty files match {source.glob!r} under {root} "
            f"(excluding {list(source.exclude)}); fix glob/exclude or the path"
        )
    if source.max_files is not None and len(docs) > source.max_files:
        stride = math.ceil(len(docs) / source.max_files)  # spread the subset over the whole tree
        docs = docs[::stride][: source.max_files]
    return docs


def is_validation(name: str, val_fraction: float) -> bool:
    """Whether a document is held out: a hash of its name, so the split is stable on every machine."""
    digest = int.from_bytes(hashlib.sha256(name.encode()).digest()[:8], "big")
    return digest / 2**64 < val_fraction


def iter_texts(docs: list[Document], max_bytes: int | None = None) -> Iterator[str]:
    """Document texts, stopping once `max_bytes` characters have been yielded (tokenizer training)."""
    total = 0
    for doc in docs:
        text = doc.read()
        yield text
        total += len(text)
        if max_bytes is not None and total >= max_bytes:
            return


def fingerprint(docs: list[Document]) -> str:
    """A cheap identity of a document list (names and sizes) for the shard cache key."""
    h = hashlib.sha256()
    for doc in docs:
        h.update(f"{doc.name}\0{doc.path.stat().st_size}\n".encode())
    return h.hexdigest()[:16]
