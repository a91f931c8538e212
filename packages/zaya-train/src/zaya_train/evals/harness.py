"""Running lm-eval tasks on zaya models: task lookup (ours first, lm-eval's own only when asked for), the
scores as flat `task/metric` numbers, the results table, and `eval.json` in the run dir.

lm-eval indexes its ~15k built-in task files in about 13 s; our tasks and `include_path` folders are indexed
alone first, and the built-in index is read only when a requested name is not among them (`zaya eval`), or is
not an exact name of a task there (`zaya lm-eval`, `builtin_index_only_when_needed`).
"""

import contextlib
import fnmatch
import json
import logging
import math
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from zaya_train.errors import ZayaTrainError
from zaya_train.evals import TASKS_DIR

EVAL_JSON = "eval.json"


class _CustomDatasetNotice(logging.Filter):
    """lm-eval warns on every task with a `custom_dataset` loader that it accepts --metadata; our loaders
    take none, so the notice says nothing about them."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "Custom kwargs can be passed" not in record.getMessage()


def quiet_custom_dataset_notice() -> None:
    """Drop lm-eval's per-task `custom_dataset` notice (once per process)."""
    logger = logging.getLogger("lm_eval.api.task")
    if not any(isinstance(f, _CustomDatasetNotice) for f in logger.filters):
        logger.addFilter(_CustomDatasetNotice())


def require_lm_eval() -> None:
    """A clear error when the `eval` extra is missing."""
    try:
        import lm_eval  # noqa: F401
    except ImportError:
        raise ZayaTrainError(
            "downstream evaluation needs lm-evaluation-harness: pip install 'zaya-train[eval]'"
        ) from None


def task_manager(tasks: Sequence[str], include_path: Sequence[str | Path] = ()) -> Any:
    """An lm-eval TaskManager that knows every name in `tasks` (ours, `include_path`, then lm-eval's own)."""
    require_lm_eval()
    from lm_eval.tasks import TaskManager

    quiet_custom_dataset_notice()
    paths = [str(TASKS_DIR), *(str(Path(p).expanduser()) for p in include_path)]
    for path in paths[1:]:
        if not Path(path).is_dir():
            raise ZayaTrainError(f"include_path {path} is not a folder of lm-eval task YAML files")
    manager = TaskManager(include_path=paths, include_defaults=False)
    missing = missing_tasks(manager, tasks)
    if missing and not any(name.startswith("zaya") for name in missing):  # zaya_* names are ours alone
        manager = TaskManager(include_path=paths, include_defaults=True)
        missing = missing_tasks(manager, tasks)
    if missing:
        ours = sorted(n for n in manager.all_tasks if n.startswith("zaya"))
        raise ZayaTrainError(
            f"unknown task(s) {', '.join(missing)}; zaya's own tasks: {', '.join(ours)} "
            "(list every task with `zaya lm-eval ls tasks`)"
        )
    return manager


def _complete_alone(index: dict[str, Any], name: str) -> bool:
    """`name` is a task of `index`, or a group whose members all are: loading it needs no other index."""
    from lm_eval.tasks._index import Kind

    entry = index.get(name)
    if entry is None or entry.kind is Kind.TAG:  # a tag gathers its tasks from every index read
        return False
    if entry.kind is not Kind.GROUP:
        return True
    members = entry.cfg.get("task") or []
    members = members if isinstance(members, list) else [members]
    return all(isinstance(m, str) and m != name and _complete_alone(index, m) for m in members)


@contextlib.contextmanager
def builtin_index_only_when_needed(tasks: Sequence[str] | None):
    """Inside: an lm-eval `TaskManager` asked for the built-in tasks reads their index only when a name in
    `tasks` is not an exact name (no pattern) of a task or group of its `include_path` folders alone; lm-eval's
    own command line (`zaya lm-eval`) then loads the same task files (an include path overrides a built-in task
    of the same name) without the 13 s index."""
    import lm_eval.tasks

    full = lm_eval.tasks.TaskManager

    def task_manager(*args: Any, include_defaults: bool = True, **kwargs: Any) -> Any:
        if include_defaults and tasks and not any(c in name for name in tasks for c in "*?["):
            alone = full(*args, include_defaults=False, **kwargs)
            if all(_complete_alone(alone.task_index, name) for name in tasks):
                return alone
        return full(*args, include_defaults=include_defaults, **kwargs)

    lm_eval.tasks.TaskManager = task_manager
    try:
        yield
    finally:
        lm_eval.tasks.TaskManager = full


def missing_tasks(manager: Any, tasks: Sequence[str]) -> list[str]:
    """Names (or patterns) in `tasks` that `manager` does not know."""
    known = manager.all_tasks
    return [t for t in tasks if not (t in known or fnmatch.filter(known, t))]


def expand_tasks(manager: Any, tasks: Sequence[str]) -> list[str]:
    """Task names with shell patterns (`zaya_stdlib_*`) expanded, order kept, no repeats."""
    names: list[str] = []
    for task in tasks:
        for name in [task] if task in manager.all_tasks else sorted(fnmatch.filter(manager.all_tasks, task)):
            if name not in names:
                names.append(name)
    return names


def scores(results: dict[str, Any]) -> dict[str, float]:
    """lm-eval's per-task metrics as `task/metric` -> number (`task/metric/filter` for other filters)."""
    flat: dict[str, float] = {}
    for section in ("results", "groups"):
        for task, metrics in (results.get(section) or {}).items():
            for key, value in metrics.items():
                metric, _, filt = key.partition(",")
                if not filt or isinstance(value, str) or not isinstance(value, int | float):
                    continue
                if isinstance(value, float) and not math.isfinite(value):
                    continue
                name = f"{task}/{metric}" if filt == "none" else f"{task}/{metric}/{filt}"
                flat[name] = float(value)
    return flat


def headline(results: dict[str, Any]) -> dict[str, float]:
    """The first metric each task declares (acc, exact_match, word_perplexity ...): one number per task."""
    flat = scores(results)
    out = {}
    for task, metrics in (results.get("higher_is_better") or {}).items():
        for metric in metrics:
            key = f"{task}/{metric}"
            if key in flat:
                out[key] = flat[key]
                break
    return out


def table(results: dict[str, Any]) -> str:
    """lm-eval's markdown results table (and the groups table when there are groups)."""
    from lm_eval.utils import make_table

    text = make_table(results)
    if results.get("groups"):
        text += "\n" + make_table(results, "groups")
    return text


def write_eval_json(folder: Path, results: dict[str, Any], subject: dict[str, Any], settings: dict[str, Any]) -> Path:
    """Merge this evaluation into `<folder>/eval.json`: one entry per task (its scores, the checkpoint step,
    the limit and shots), so evaluating other tasks later keeps the earlier ones."""
    from zaya_config.atomic import write_text_atomic

    path = Path(folder) / EVAL_JSON
    previous = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    entries = dict(previous.get("tasks") or {})
    flat = scores(results)
    evaluated_at = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    for section in ("results", "groups"):
        for task in results.get(section) or {}:
            entries[task] = {
                "scores": {k.split("/", 1)[1]: v for k, v in flat.items() if k.split("/", 1)[0] == task},
                "n_samples": (results.get("n-samples") or {}).get(task, {}).get("effective"),
                "n_shot": (results.get("n-shot") or {}).get(task),
                "version": (results.get("versions") or {}).get(task),
                "step": subject.get("step"),
                "tokens": subject.get("tokens"),
                "evaluated_at": evaluated_at,
                **settings,
            }
    record = {"format": "zaya-eval/1", "subject": subject, "tasks": dict(sorted(entries.items()))}
    write_text_atomic(path, json.dumps(record, indent=2, default=str) + "\n")
    return path
