"""The datatrove writer step: one token shard per task, built under a temporary name and renamed.

A task whose shard is already in place (a resumed prepare, killed after the rename but before datatrove's
completion marker) leaves it untouched and reads nothing.
"""

import shutil
from pathlib import Path

from datatrove.data import DocumentsPipeline
from datatrove.pipeline.base import PipelineStep
from zaya_config.atomic import write_dir_atomic

from zaya_train.data.dataset import shard_path
from zaya_train.data.shards import ShardBuilder


class WriteShard(PipelineStep):
    """Consumes the tokenized stream of task `rank` into `OUT/shards/<rank>.zarr`."""

    name = "zaya shard"
    type = "Writer"

    def __init__(self, out: str, tokenizer: dict, chunk_tokens: int = 1 << 16) -> None:
        super().__init__()
        self.out = out
        self.tokenizer = tokenizer
        self.chunk_tokens = chunk_tokens

    def run(self, data: DocumentsPipeline = None, rank: int = 0, world_size: int = 1) -> DocumentsPipeline:
        """Write the shard (nothing is yielded: this is the last step)."""
        target = shard_path(Path(self.out), rank)
        if target.is_dir():
            self.stat_update("shards_kept")
            return
        yield from ()
        for leftover in target.parent.glob(f".tmp.{target.name}.*"):  # a killed attempt's half shard
            shutil.rmtree(leftover, ignore_errors=True)

        def fill(tmp: Path) -> None:
            builder = ShardBuilder(tmp, self.tokenizer, self.chunk_tokens)
            for doc in data or ():
                builder.add(doc.metadata["ids"], doc.metadata["split"])
            builder.close()

        write_dir_atomic(target, fill)
        self.stat_update("shards_written")
