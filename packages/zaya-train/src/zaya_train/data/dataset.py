"""The layout of a prepared dataset: one zarr token shard per datatrove task, plus an index written last.

`OUT/` holds `plan.json` (what is being prepared: inputs, tokenizer, split; a resume must match it),
`shards/00000.zarr ...` (shards.py's format, one per
task, each built under a temporary name and renamed), `.datatrove/` (the executor's logs and per-task
completion markers) and, once every shard is in place, `index.json` (atomic). Readers trust only the index:
a shard it does not list, finished or half written, is never read.
"""

import json
from pathlib import Path

from zaya_config.atomic import write_text_atomic

from zaya_train.errors import ZayaTrainError

DATASET_FORMAT = "zaya-token-dataset-v1"
INDEX = "index.json"
PLAN = "plan.json"
SHARDS = "shards"
LOGS = ".datatrove"


def shard_path(out: Path, rank: int) -> Path:
    """Where task `rank` puts its shard."""
    return Path(out) / SHARDS / f"{rank:05d}.zarr"


def is_dataset(path: Path) -> bool:
    """Whether `path` is a dataset folder (finished or not), as opposed to a single v1 zarr shard."""
    return (Path(path) / PLAN).is_file() or (Path(path) / INDEX).is_file()


def write_index(out: Path, tasks: int, tokenizer: dict) -> Path:
    """Index every task's shard (all must be in place) with its counts; written last, atomically."""
    import zarr

    shards = []
    for rank in range(tasks):
        path = shard_path(out, rank)
        if not path.is_dir():
            raise ZayaTrainError(f"{out}: shard {path.name} of task {rank} is missing; rerun the prepare to finish it")
        attrs = dict(zarr.open_group(str(path), mode="r").attrs)
        shards.append({"path": path.relative_to(out).as_posix(), **{k: attrs[k] for k in ("num_docs", "num_tokens")}})
    index = {
        "format": DATASET_FORMAT,
        "tokenizer": tokenizer,
        "shards": shards,
        "num_docs": {s: sum(e["num_docs"][s] for e in shards) for s in ("train", "val")},
        "num_tokens": {s: sum(e["num_tokens"][s] for e in shards) for s in ("train", "val")},
    }
    return write_text_atomic(Path(out) / INDEX, json.dumps(index, indent=1) + "\n")


def read_index(out: Path) -> dict:
    """The index of a finished dataset; an unfinished one says how to finish it."""
    path = Path(out) / INDEX
    if not path.is_file():
        raise ZayaTrainError(
            f"{out} is an unfinished prepared dataset (no {INDEX}); rerun the same `zaya data prepare` "
            "command to resume it"
        )
    index = json.loads(path.read_text(encoding="utf-8"))
    if index.get("format") != DATASET_FORMAT:
        raise ZayaTrainError(f"{path}: format {index.get('format')!r}, expected {DATASET_FORMAT!r}; re-prepare it")
    return index
