"""The datatrove reader step: task `rank` streams the documents of its input shard, one at a time."""

import json
from collections.abc import Iterator
from pathlib import Path

from datatrove.data import Document, DocumentsPipeline
from datatrove.pipeline.base import PipelineStep

from zaya_train.data.prepare.inputs import InputFile
from zaya_train.errors import ZayaTrainError


def _records(item: InputFile, field: str) -> Iterator[tuple[str, str]]:
    """(name, text) of each record of a jsonl file (interim: the shared readers replace this)."""
    with open(item.path, encoding="utf-8") as handle:
        for line_no, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                text = json.loads(line)[field]
            except (json.JSONDecodeError, KeyError, TypeError) as err:
                raise ZayaTrainError(
                    f"{item.path}:{line_no}: not a JSON object with a {field!r} string ({err}); fix the line or pass --field"
                ) from None
            yield f"{item.name}:{line_no}", text


def iter_documents_of(task: list[InputFile], field: str = "text") -> Iterator[tuple[str, str]]:
    """(name, text) of every document of one task, in order: a text file whole, a record file per record."""
    for item in task:
        if item.records:
            yield from _records(item, field)
        else:
            yield item.name, Path(item.path).read_text(encoding="utf-8", errors="replace")


def iter_texts_of(tasks: list[list[InputFile]], max_chars: int, field: str = "text") -> Iterator[str]:
    """Document texts of `tasks` up to `max_chars` characters (what a BPE is trained on)."""
    total = 0
    for task in tasks:
        for _name, text in iter_documents_of(task, field):
            yield text
            total += len(text)
            if total >= max_chars:
                return


class ReadInputs(PipelineStep):
    """Yields a datatrove Document per document of task `rank`'s input shard (streamed: one in memory)."""

    name = "zaya inputs"
    type = "Reader"

    def __init__(self, tasks: list[list[InputFile]], field: str = "text") -> None:
        super().__init__()
        self.tasks = tasks
        self.field = field

    def run(self, data: DocumentsPipeline = None, rank: int = 0, world_size: int = 1) -> DocumentsPipeline:
        """The documents of task `rank` (datatrove's rank is our task index)."""
        for name, text in iter_documents_of(self.tasks[rank], self.field):
            self.stat_update("documents")
            yield Document(text=text, id=name)
