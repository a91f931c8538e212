"""JSON Lines corpora, plain or compressed (`.gz` by gzip, `.zst` by zstandard), read line by line."""

import gzip
import io
import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

from zaya_train.data.readers.record import BadRecord, RawDocument

SUFFIXES = (".jsonl", ".ndjson", ".jsonl.gz", ".ndjson.gz", ".jsonl.zst", ".ndjson.zst", ".json.gz", ".json.zst")


@contextmanager
def _open(path: Path) -> Iterator[BinaryIO]:
    """The file's decompressed bytes as a stream (never the whole file in memory)."""
    if path.name.endswith(".gz"):
        with gzip.open(path, "rb") as handle:
            yield handle
    elif path.name.endswith(".zst"):
        import zstandard

        with path.open("rb") as raw, zstandard.ZstdDecompressor().stream_reader(raw) as reader:
            yield io.BufferedReader(reader)
    else:
        with path.open("rb") as handle:
            yield handle


def read_jsonl(path: Path, name: str, field: str, bad: BadRecord) -> Iterator[RawDocument]:
    """Each line's `field` as a document named `<name>:<line>` (lines count from 1; blank lines are skipped)."""
    with _open(path) as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            where = f"{path}, line {number}"
            try:
                record = json.loads(line.decode("utf-8"))
            except UnicodeDecodeError as err:
                bad(where, f"not UTF-8 (byte 0x{line[err.start]:02x} at offset {err.start})")
                continue
            except json.JSONDecodeError as err:
                bad(where, f"invalid JSON ({err.msg} at column {err.colno})")
                continue
            if not isinstance(record, dict):
                bad(where, f"a JSON {type(record).__name__}, not an object with a {field!r} field")
                continue
            if field not in record:
                bad(
                    where,
                    f"no field {field!r} (fields: {', '.join(sorted(record)) or 'none'}); choose one with --field",
                )
                continue
            text = bad.text(where, record[field], field)
            if text is not None:
                yield RawDocument(f"{name}:{number}", text)
