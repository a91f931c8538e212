"""What a prepare reads, cut into datatrove tasks: one task per input shard.

An input shard is one record file (jsonl, .gz, .zst, parquet) or datasets folder, or a run of consecutive
plain-text files (one file = one document) of about `shard_bytes`. The cut depends on the inputs only, never
on the number of workers, so the token stream is the same whatever runs it.
"""

from dataclasses import dataclass
from pathlib import Path

from zaya_train.config import SourceConfig
from zaya_train.data.corpus import Document, list_documents
from zaya_train.errors import ZayaTrainError

RECORD_SUFFIXES = (".jsonl", ".jsonl.gz", ".jsonl.zst", ".parquet")
DEFAULT_SHARD_BYTES = 32 << 20


@dataclass(frozen=True)
class InputFile:
    """One input: `records` files hold many documents, a text file is one document named `name`."""

    name: str
    path: str
    records: bool
    size: int


def is_datasets_folder(path: Path) -> bool:
    """A Hugging Face `save_to_disk` folder (read through the readers, as one input shard)."""
    return (path / "dataset_info.json").is_file() or (path / "state.json").is_file()


def _as_input(doc: Document) -> InputFile:
    records = doc.path.name.endswith(RECORD_SUFFIXES) or (doc.path.is_dir() and is_datasets_folder(doc.path))
    size = doc.path.stat().st_size if doc.path.is_file() else sum(p.stat().st_size for p in doc.path.rglob("*"))
    return InputFile(doc.name, str(doc.path), records, size)


def list_inputs(paths: list[Path], glob: str, exclude: list[str] | None = None) -> list[InputFile]:
    """Every input of `paths` in order (folders: matching files sorted by name)."""
    inputs: list[InputFile] = []
    for path in paths:
        if path.is_dir() and is_datasets_folder(path):
            docs = [Document(path.name, path)]
        else:
            docs = list_documents(SourceConfig(path=str(path), glob=glob, exclude=exclude or []), key=str(path))
        inputs += [_as_input(doc) for doc in docs]
    return inputs


def from_documents(docs: list[Document]) -> list[InputFile]:
    """A training source's documents (corpus.list_documents) as inputs."""
    return [_as_input(doc) for doc in docs]


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
