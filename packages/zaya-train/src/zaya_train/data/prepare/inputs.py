"""What a prepare reads, cut into datatrove tasks: one task per input shard.

An input shard is one record file (jsonl, .gz, .zst, parquet) or datasets folder (the formats and their
detection are the readers', zaya_train.data.readers), or a run of consecutive plain-text files (one file =
one document) of about `shard_bytes`. The cut depends on the inputs only, never
on the number of workers, so the token stream is the same whatever runs it.
"""

from dataclasses import dataclass
from pathlib import Path

from zaya_train.config import SourceConfig
from zaya_train.data.corpus import Document, list_documents
from zaya_train.errors import ZayaTrainError

DEFAULT_SHARD_BYTES = 32 << 20
ALL_FILES = "**/*"  # the default glob: a folder is read as the readers detect it


@dataclass(frozen=True)
class InputFile:
    """One input: a text file is one document named `name`; a record file (`format` not "text") holds many,
    read with the readers as part of a read of `root`, so they are named as a whole read names them."""

    name: str
    path: str
    size: int
    format: str = "text"
    root: str = ""

    @property
    def records(self) -> bool:
        return self.format != "text"


def _size(path: Path) -> int:
    return path.stat().st_size if path.is_file() else sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def list_inputs(paths: list[Path], glob: str = ALL_FILES, exclude: list[str] | None = None) -> list[InputFile]:
    """Every input of `paths` in order, each as the readers detect it. A folder's own glob (not ALL_FILES)
    picks its files whatever the folder holds, each read as its suffix says (`--glob '**/*.py'` reads the
    Python files of a folder that also holds jsonl)."""
    from zaya_train.data.readers import corpus_files, detect_format

    inputs: list[InputFile] = []
    for path in paths:
        fmt = detect_format(path)
        if fmt == "text" or (path.is_dir() and fmt != "datasets" and glob != ALL_FILES):
            docs = list_documents(SourceConfig(path=str(path), glob=glob, exclude=exclude or []), key=str(path))
            for doc in docs:
                own = detect_format(doc.path)
                inputs.append(
                    InputFile(doc.name, str(doc.path), _size(doc.path), own, "" if own == "text" else str(path))
                )
        else:
            inputs += [InputFile(f.name, str(f), _size(f), fmt, str(path)) for f in corpus_files(path, fmt)]
    return inputs


def from_documents(docs: list[Document]) -> list[InputFile]:
    """Text documents (corpus.list_documents: a training source's files) as inputs."""
    return [InputFile(doc.name, str(doc.path), doc.path.stat().st_size) for doc in docs]


def plan_tasks(inputs: list[InputFile], shard_bytes: int = DEFAULT_SHARD_BYTES) -> list[list[InputFile]]:
    """Cut `inputs` into tasks: each record input alone, consecutive text files up to `shard_bytes`."""
    if shard_bytes <= 0:
        raise ZayaTrainError(f"--shard-mb must be positive, got {shard_bytes / (1 << 20):g}")
    tasks: list[list[InputFile]] = []
    run: list[InputFile] = []
    run_bytes = 0
    for item in inputs:
        if item.records:
            if run:
                tasks.append(run)
                run, run_bytes = [], 0
            tasks.append([item])
            continue
        if run and run_bytes + item.size > shard_bytes:
            tasks.append(run)
            run, run_bytes = [], 0
        run.append(item)
        run_bytes += item.size
    if run:
        tasks.append(run)
    if not tasks:
        raise ZayaTrainError("nothing to prepare: the inputs hold no files; check the paths and --glob")
    return tasks
