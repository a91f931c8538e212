"""Hugging Face `datasets` folders written by `save_to_disk`: their Arrow stream files, read record batch by
record batch with pyarrow in the order `state.json` lists them (what `datasets.load_from_disk` maps; a
`DatasetDict` folder is read split by split in `dataset_dict.json`'s order). `save_to_disk` writes a
dataset's rows flattened (indices applied), so the files hold the rows in the dataset's order.
"""

import json
from collections.abc import Iterator
from pathlib import Path

from zaya_train.data.readers.parquet import rows_of
from zaya_train.data.readers.record import BadRecord, RawDocument
from zaya_train.errors import ZayaTrainError

STATE = "state.json"
DICT = "dataset_dict.json"


def is_datasets_folder(path: Path) -> bool:
    """Whether `path` is a folder `Dataset.save_to_disk` or `DatasetDict.save_to_disk` wrote."""
    return path.is_dir() and ((path / STATE).is_file() or (path / DICT).is_file())


def dataset_folders(path: Path) -> list[tuple[str, Path]]:
    """(name prefix, folder) of each dataset: the folder itself, or each split of a DatasetDict."""
    if (path / DICT).is_file():
        splits = json.loads((path / DICT).read_text())["splits"]
        return [(split, path / split) for split in splits]
    return [("", path)]


def read_dataset(folder: Path, name: str, field: str, bad: BadRecord) -> Iterator[RawDocument]:
    """Column `field` of each row as a document named `<name>:<row>` (rows count from 0 over the dataset)."""
    try:
        import pyarrow as pa
    except ImportError:
        raise ZayaTrainError("reading a datasets folder needs pyarrow: pip install 'zaya-train[corpora]'") from None
    try:
        files = [entry["filename"] for entry in json.loads((folder / STATE).read_text())["_data_files"]]
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise ZayaTrainError(
            f"{folder / STATE} is not a datasets state file ({err}); save it with save_to_disk"
        ) from None
    row = 0
    for filename in files:
        path = folder / filename
        try:
            with pa.memory_map(str(path)) as source:
                reader = pa.ipc.open_stream(source)
                if field not in reader.schema.names:
                    raise ZayaTrainError(
                        f"{path} has no column {field!r} (columns: {', '.join(reader.schema.names)}); "
                        "choose one with --field"
                    )
                for batch in reader:
                    yield from rows_of(batch.column(field).to_pylist(), folder, name, field, row, bad)
                    row += batch.num_rows
        except (OSError, pa.ArrowInvalid) as err:
            raise ZayaTrainError(f"{path} is not a readable Arrow file of a datasets folder: {err}") from None
