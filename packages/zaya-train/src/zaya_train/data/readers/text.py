"""Plain text corpora: a file, or a folder's files matching a glob, one file = one document (the behaviour
`zaya data prepare` always had, through `corpus.list_documents`: undecodable bytes are replaced).
"""

from collections.abc import Iterator
from pathlib import Path

from zaya_train.config import SourceConfig
from zaya_train.data.corpus import list_documents
from zaya_train.data.readers.record import RawDocument


def read_text(path: Path | str, glob: str = "**/*", exclude: tuple[str, ...] = ()) -> Iterator[RawDocument]:
    """Each file's text, named by its path relative to `path` (the file's own name for a single file)."""
    for doc in list_documents(SourceConfig(path=str(path), glob=glob, exclude=list(exclude)), key=str(path)):
        yield RawDocument(doc.name, doc.read())
