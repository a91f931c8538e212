"""Task data from local JSON-lines files, for lm-eval task YAMLs (`custom_dataset`): nothing is downloaded.

A task YAML names its files per split, relative to the shipped `tasks/data/` folder or absolute:

    custom_dataset: !function zaya_train.evals.local_datasets.load_jsonl
    dataset_kwargs:
      files: {test: zaya_stdlib_nextline.jsonl}
"""

import json
from pathlib import Path
from typing import Any

from zaya_train.errors import ZayaTrainError

DATA_DIR = Path(__file__).parent / "tasks" / "data"


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """The records of a JSON-lines file, with the line number in the error when one is not JSON."""
    rows = []
    for number, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError as err:
            raise ZayaTrainError(f"{path}:{number}: not a JSON object ({err.msg})") from None
    return rows


def load_jsonl(files: dict[str, str] | None = None, **metadata: Any) -> Any:
    """A `datasets.DatasetDict` with one split per file (lm-eval passes its task metadata too: ignored)."""
    import datasets

    if not files:
        raise ZayaTrainError("a zaya task YAML must give dataset_kwargs.files: {split: file.jsonl}")
    splits = {}
    for split, name in files.items():
        path = Path(name) if Path(name).is_absolute() else DATA_DIR / name
        if not path.is_file():
            raise ZayaTrainError(f"task data file {path} (split {split!r}) does not exist")
        splits[split] = datasets.Dataset.from_list(read_jsonl(path))
    return datasets.DatasetDict(splits)
