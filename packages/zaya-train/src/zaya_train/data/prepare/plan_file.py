"""`OUT/plan.json`: what a prepare in OUT was started with, so a rerun resumes only the same prepare."""

import json
from dataclasses import asdict
from pathlib import Path

from zaya_config.atomic import write_text_atomic

from zaya_train.data.dataset import PLAN, is_dataset
from zaya_train.data.prepare.inputs import InputFile
from zaya_train.errors import ZayaTrainError


def make_plan(
    tasks: list[list[InputFile]], tokenizer: dict, val_fraction: float, chunk_tokens: int, field: str, on_error: str
) -> dict:
    """The plan as JSON-ready data."""
    return {
        "tasks": [[asdict(item) for item in task] for task in tasks],
        "tokenizer": tokenizer,
        "val_fraction": val_fraction,
        "chunk_tokens": chunk_tokens,
        "field": field,
        "on_error": on_error,
    }


def claim(out: Path, plan: dict) -> bool:
    """Write the plan into a new OUT, or check an existing OUT holds the same one; True if resuming."""
    out = Path(out)
    if out.exists() and (not out.is_dir() or any(out.iterdir())) and not is_dataset(out):
        raise ZayaTrainError(f"{out} exists and is not a prepared dataset; pass another --out or remove it")
    if is_dataset(out):
        old = json.loads((out / PLAN).read_text(encoding="utf-8")) if (out / PLAN).is_file() else {}
        changed = sorted(key for key in plan if old.get(key) != plan[key])
        if changed:
            raise ZayaTrainError(
                f"{out} holds a prepare with other {', '.join(changed)}; pass another --out, or remove it to start over"
            )
        return True
    write_text_atomic(out / PLAN, json.dumps(plan, indent=1) + "\n")
    return False
