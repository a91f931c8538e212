"""Parquet corpora: one column read batch by batch (row group by row group), never the whole file."""

from collections.abc import Iterator
from pathlib import Path

from zaya_train.data.readers.record import BadRecord, RawDocument
from zaya_train.errors import ZayaTrainError

SUFFIXES = (".parquet", ".pq")
BATCH_ROWS = 1024


def _corpora_extra(what: str) -> ZayaTrainError:
    return ZayaTrainError(f"reading {what} needs pyarrow: pip install 'zaya-train[corpora]'")


def read_parquet(path: Path, name: str, field: str, bad: BadRecord) -> Iterator[RawDocument]:
    """Column `field` of each row as a document named `<name>:<row>` (rows count from 0 over the file)."""
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise _corpora_extra("parquet") from None
    try:
        handle = pq.ParquetFile(path)
    except Exception as err:
        raise ZayaTrainError(f"{path} is not a readable parquet file: {err}") from None
    with handle:
        columns = handle.schema_arrow.names
        if field not in columns:
            raise ZayaTrainError(
                f"{path} has no column {field!r} (columns: {', '.join(columns)}); choose one with --field"
            )
        row = 0
        for batch in handle.iter_batches(batch_size=BATCH_ROWS, columns=[field]):
            yield from rows_of(batch.column(0).to_pylist(), path, name, field, row, bad)
            row += batch.num_rows


def rows_of(values: list, path: Path, name: str, field: str, first_row: int, bad: BadRecord) -> Iterator[RawDocument]:
    """Documents from one batch of a column (shared by the parquet and `datasets` readers)."""
    for offset, value in enumerate(values):
        row = first_row + offset
        text = bad.text(f"{path}, row {row}", value, field)
        if text is not None:
            yield RawDocument(f"{name}:{row}", text)
