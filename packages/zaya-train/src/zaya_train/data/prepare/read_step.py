"""The datatrove reader step: task `rank` streams the documents of its input shard, one at a time."""

from collections.abc import Iterator
from pathlib import Path

from datatrove.data import Document, DocumentsPipeline
from datatrove.pipeline.base import PipelineStep

from zaya_train.data.prepare.inputs import InputFile
from zaya_train.data.readers import ReadStats, iter_documents


def iter_documents_of(
    task: list[InputFile], field: str = "text", on_error: str = "raise", stats: ReadStats | None = None
) -> Iterator[tuple[str, str]]:
    """(name, text) of every document of one task, in order: a text file whole, a record file per record."""
    for item in task:
        if item.records:
            docs = iter_documents(item.root, field=field, format=item.format, on_error=on_error, stats=stats,
                                  files=[Path(item.path)])  # fmt: skip
            yield from ((doc.name, doc.text) for doc in docs)
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

    def __init__(self, tasks: list[list[InputFile]], field: str = "text", on_error: str = "raise") -> None:
        super().__init__()
        self.tasks = tasks
        self.field = field
        self.on_error = on_error

    def run(self, data: DocumentsPipeline = None, rank: int = 0, world_size: int = 1) -> DocumentsPipeline:
        """The documents of task `rank` (datatrove's rank is our task index)."""
        stats = ReadStats()
        for name, text in iter_documents_of(self.tasks[rank], self.field, self.on_error, stats):
            self.stat_update("documents")
            yield Document(text=text, id=name)
        if stats.skipped:
            self.stat_update("bad_records_skipped", value=stats.skipped)
