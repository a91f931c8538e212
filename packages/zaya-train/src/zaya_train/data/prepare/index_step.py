"""The datatrove step of the last, one-task stage: the dataset's index, once every shard is in place.

A stage of its own (and not the main process's job) so that on Slurm it is a job that depends on the
tokenizing array and runs when the array is done, with no process of ours waiting for it.
"""

from pathlib import Path

from datatrove.data import DocumentsPipeline
from datatrove.pipeline.base import PipelineStep

from zaya_train.data.dataset import write_index


class WriteIndex(PipelineStep):
    """Writes `OUT/index.json` (atomic) listing the `tasks` shards in task order."""

    name = "zaya index"
    type = "Writer"

    def __init__(self, out: str, tasks: int, tokenizer: dict) -> None:
        super().__init__()
        self.out = out
        self.tasks = tasks
        self.tokenizer = tokenizer

    def run(self, data: DocumentsPipeline = None, rank: int = 0, world_size: int = 1) -> DocumentsPipeline:
        """Index the shards (yields nothing)."""
        write_index(Path(self.out), self.tasks, self.tokenizer)
        yield from ()
