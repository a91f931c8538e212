"""Corpus readers: every format a pretraining corpus comes in, as one stream of named text documents.

    iter_documents(path, *, field="text", format=None, on_error="raise", glob="**/*", stats=None, files=None)
        -> Iterator[RawDocument]          # RawDocument(name: str, text: str), .read() -> text

- `path`: a file or a folder. `format` (one of FORMATS) is detected when None: `.jsonl`/`.ndjson` (also `.gz`,
  `.zst`, and `.json.gz`/`.json.zst`) -> "jsonl", `.parquet`/`.pq` -> "parquet", a folder written by
  `datasets`' `save_to_disk` (`state.json` or `dataset_dict.json`) -> "datasets", a folder holding parquet
  files -> "parquet" (every one, sorted), else holding JSON Lines files -> "jsonl", anything else -> "text"
  (one file = one document, `glob` picks a folder's files; stdlib included). `detect_format` says which.
- `field`: the JSON field / column holding the text (jsonl, parquet, datasets; ignored for text).
- Names are stable, so the validation split (`corpus.is_validation`) is too: `<file>:<line>` (jsonl, lines
  from 1), `<file>:<row>` (parquet, rows from 0 per file), `<split>:<row>` for a datasets DatasetDict
  (`dataset:<row>` for one Dataset; rows from 0 per dataset), the relative path for text; `<file>` is relative to a folder `path`, the file's name otherwise.
- A bad record (invalid JSON, a missing field, a non-UTF-8 byte, a non-string or null value) raises
  `ZayaTrainError` naming the file and line (jsonl) or row (parquet, datasets); `on_error="skip"` skips it
  and counts it in `stats` (a `ReadStats` you pass in: `documents`, `empty`, `skipped`, `examples`,
  `summary()`). Empty texts are dropped (counted in `stats.empty`), as empty text files always were.
- Everything streams: jsonl line by line, parquet by record batches of a row group, datasets by Arrow
  record batches; nothing holds a whole file.

`corpus_files(path, format)` lists the files (or datasets) one read goes through, in order, and
`iter_documents(path, files=[...])` reads only some of them with the same names, so a parallel reader can
split the work by file and still name every document as a whole read does.
"""

from collections.abc import Iterator, Sequence
from pathlib import Path

from zaya_train.config import STDLIB
from zaya_train.data.readers.hf_datasets import dataset_folders, is_datasets_folder, read_dataset
from zaya_train.data.readers.jsonl import SUFFIXES as JSONL_SUFFIXES
from zaya_train.data.readers.jsonl import read_jsonl
from zaya_train.data.readers.parquet import SUFFIXES as PARQUET_SUFFIXES
from zaya_train.data.readers.parquet import read_parquet
from zaya_train.data.readers.record import ON_ERROR, BadRecord, RawDocument, ReadStats
from zaya_train.data.readers.text import read_text
from zaya_train.errors import ZayaTrainError

FORMATS = ("jsonl", "parquet", "datasets", "text")

__all__ = [
    "FORMATS",
    "ON_ERROR",
    "RawDocument",
    "ReadStats",
    "corpus_files",
    "detect_format",
    "iter_documents",
]


def _has_suffix(path: Path, suffixes: tuple[str, ...]) -> bool:
    return path.name.lower().endswith(suffixes)


def _files(root: Path, suffixes: tuple[str, ...]) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file() and _has_suffix(p, suffixes))


def detect_format(path: Path | str) -> str:
    """The format `iter_documents` reads `path` as (see the module docstring for the rules)."""
    path = Path(path)
    if str(path) == STDLIB:
        return "text"
    if not path.exists():
        raise ZayaTrainError(f"corpus path {path} does not exist; point it at a file or folder of documents")
    if path.is_file():
        if _has_suffix(path, JSONL_SUFFIXES):
            return "jsonl"
        return "parquet" if _has_suffix(path, PARQUET_SUFFIXES) else "text"
    if is_datasets_folder(path):
        return "datasets"
    if _files(path, PARQUET_SUFFIXES):
        return "parquet"
    return "jsonl" if _files(path, JSONL_SUFFIXES) else "text"


def corpus_files(path: Path | str, format: str | None = None) -> list[Path]:
    """The files (datasets: dataset folders) a read of `path` goes through, in reading order."""
    path = Path(path)
    fmt = _checked_format(path, format)
    if fmt == "datasets":
        return [folder for _, folder in dataset_folders(path)]
    if fmt == "text" or path.is_file():
        return [path]
    files = _files(path, JSONL_SUFFIXES if fmt == "jsonl" else PARQUET_SUFFIXES)
    if not files:
        raise ZayaTrainError(f"no {fmt} files under {path}; check the path or pass the right --format")
    return files


def _checked_format(path: Path, format: str | None) -> str:
    if format is None:
        return detect_format(path)
    if format not in FORMATS:
        raise ZayaTrainError(f"format = {format!r}; allowed: {', '.join(FORMATS)}")
    if str(path) != STDLIB and not path.exists():
        raise ZayaTrainError(f"corpus path {path} does not exist; point it at a file or folder of documents")
    if format == "datasets" and not is_datasets_folder(path):
        raise ZayaTrainError(f"{path} is not a folder written by datasets' save_to_disk (no state.json)")
    return format


def _read_one(path: Path, file: Path, fmt: str, field: str, glob: str, bad: BadRecord) -> Iterator[RawDocument]:
    if fmt == "text":
        return read_text(path, glob)
    if fmt == "datasets":
        split = dict((folder, split) for split, folder in dataset_folders(path)).get(file, "")
        return read_dataset(file, split or "dataset", field, bad)
    name = file.name if path.is_file() else file.relative_to(path).as_posix()
    return (read_jsonl if fmt == "jsonl" else read_parquet)(file, name, field, bad)


def iter_documents(
    path: Path | str,
    *,
    field: str = "text",
    format: str | None = None,
    on_error: str = "raise",
    glob: str = "**/*",
    stats: ReadStats | None = None,
    files: Sequence[Path] | None = None,
) -> Iterator[RawDocument]:
    """Every document of a corpus file or folder, streamed, in a stable order with stable names.

    `files` (entries of `corpus_files(path, format)`) reads only those, naming documents as a whole read does.
    """
    path = Path(path)
    fmt = _checked_format(path, format)
    stats = stats if stats is not None else ReadStats()
    bad = BadRecord(on_error, stats)
    for file in corpus_files(path, fmt) if files is None else [Path(f) for f in files]:
        for doc in _read_one(path, file, fmt, field, glob, bad):
            if not doc.text:
                stats.empty += 1
                continue
            stats.documents += 1
            yield doc
