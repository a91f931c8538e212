"""`prepare_dataset`: the one engine that tokenizes inputs into a prepared dataset (dataset.py) on datatrove."""

import threading
from pathlib import Path

from zaya_train.config import TokenizerConfig
from zaya_train.data.dataset import INDEX, LOGS
from zaya_train.data.prepare.executors import SlurmOptions, build_executors
from zaya_train.data.prepare.index_step import WriteIndex
from zaya_train.data.prepare.inputs import InputFile
from zaya_train.data.prepare.plan_file import claim, make_plan
from zaya_train.data.prepare.read_step import ReadInputs
from zaya_train.data.prepare.tokenize_step import TokenizeDocuments
from zaya_train.data.prepare.write_step import WriteShard
from zaya_train.data.tokenizers import load_tokenizer


def _watch(completions: Path, total: int, description: str, stop: threading.Event) -> None:
    """A rich bar of finished tasks, counted from datatrove's completion markers."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, transient=True) as bar:
        task = bar.add_task(description, total=total)
        while not stop.wait(0.5):
            done = len(list(completions.glob("*"))) if completions.is_dir() else 0
            bar.update(task, completed=done)


def prepare_dataset(
    tasks: list[list[InputFile]],
    tokenizer: TokenizerConfig,
    out: Path,
    val_fraction: float,
    *,
    chunk_tokens: int = 1 << 16,
    field: str = "text",
    on_error: str = "raise",
    executor: str = "local",
    workers: int | None = None,
    slurm: SlurmOptions | None = None,
    progress: bool = True,
    description: str = "tokenizing",
) -> bool:
    """Tokenize `tasks` (one shard each) into OUT; resumes a prepare killed earlier with the same plan.

    Returns True when OUT is complete (its index written), False when the work was handed to Slurm.
    """
    out = Path(out)
    described = load_tokenizer(tokenizer).describe()  # a bad tokenizer fails here, before any task starts
    pipeline = [
        ReadInputs(tasks, field, on_error),
        TokenizeDocuments(tokenizer, val_fraction),
        WriteShard(str(out), described, chunk_tokens),
    ]
    _, last = build_executors(
        executor, out, pipeline, [WriteIndex(str(out), len(tasks), described)], len(tasks), workers, slurm
    )  # bad executor options fail here, before OUT is touched
    claim(out, make_plan(tasks, described, val_fraction, chunk_tokens, field, on_error))
    if (out / INDEX).is_file():
        return True
    if executor != "local":
        last.run()
        return False
    stop = threading.Event()
    watcher = threading.Thread(
        target=_watch, args=(out / LOGS / "tokenize" / "completions", len(tasks), description, stop), daemon=True
    )
    if progress:
        watcher.start()
    try:
        last.run()
    finally:
        stop.set()
        if progress:
            watcher.join()
    return (out / INDEX).is_file()
