"""Text sources as lists of documents (one file = one document), including the embedded default corpus:
the Python standard library sources of the running interpreter, present on every machine that runs us.
"""

import fnmatch
import hashlib
import math
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


def _excluded(rel: str, patterns: list[str]) -> bool:
    return any(
        fnmatch.fnmatch("/" + rel, pattern if pattern.startswith(("/", "*")) else "/" + pattern) for pattern in patterns
    )


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
        docs = [
            Document(p.relative_to(root).as_posix(), p)
            for p in sorted(root.glob(source.glob))
            if p.is_file() and not _excluded(p.relative_to(root).as_posix(), list(source.exclude))
        ]
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
