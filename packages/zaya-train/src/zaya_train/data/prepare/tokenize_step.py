"""The datatrove tokenizer step: batches of documents through the tokenizer, EOS after every document.

The tokenizer is loaded in the task's own process from its config (a tokenizer.json path or `byte`), so
nothing heavy is pickled; one thread per task (datatrove's model: one core per task), so workers scale.
"""

import os
from dataclasses import astuple
from pathlib import Path

import numpy as np
from datatrove.data import DocumentsPipeline
from datatrove.pipeline.base import PipelineStep

from zaya_train.config import TokenizerConfig
from zaya_train.data.corpus import is_validation
from zaya_train.data.shards import check_ids

BATCH_CHARS = 1 << 20  # tokenize ~1 MB of text per call: bounded memory, few calls


_LOADED: dict[tuple, object] = {}  # this process's tokenizers, by config and file version


def task_tokenizer(cfg: TokenizerConfig):
    """The task's tokenizer, loaded once per worker process rather than once per task (~35 ms for a
    tokenizer.json of 8k ids); a changed file (mtime, size) loads again."""
    from zaya_train.data.tokenizers import load_tokenizer

    path = Path(str(cfg.path)) if cfg.kind == "file" and cfg.path else None
    stat = path.stat() if path is not None and path.is_file() else None
    key = (astuple(cfg), (stat.st_mtime_ns, stat.st_size) if stat else None)
    if key not in _LOADED:
        _LOADED.clear()  # one tokenizer per prepare: keep only the latest
        _LOADED[key] = load_tokenizer(cfg)
    return _LOADED[key]


class TokenizeDocuments(PipelineStep):
    """Sets `metadata["ids"]` (uint32, EOS last) and `metadata["split"]`; drops the text once tokenized."""

    name = "zaya tokenize"
    type = "Tokenizer"

    def __init__(self, tokenizer: TokenizerConfig, val_fraction: float, batch_chars: int = BATCH_CHARS) -> None:
        super().__init__()
        self.tokenizer = tokenizer
        self.val_fraction = val_fraction
        self.batch_chars = batch_chars

    def _flush(self, tok, batch: list) -> list:
        eos = np.array([tok.eos_id], dtype=np.uint32)
        for doc, ids in zip(batch, tok.encode_batch([d.text for d in batch]), strict=True):
            check_ids(ids, tok.vocab_size)
            doc.metadata["ids"] = np.concatenate([ids, eos])
            doc.metadata["split"] = "val" if is_validation(doc.id, self.val_fraction) else "train"
            doc.text = ""
            self.stat_update("tokens", value=len(ids) + 1)
        return batch

    def run(self, data: DocumentsPipeline = None, rank: int = 0, world_size: int = 1) -> DocumentsPipeline:
        """Tokenize the stream in batches of about `batch_chars` characters."""
        os.environ["TOKENIZERS_PARALLELISM"] = "false"
        os.environ["RAYON_NUM_THREADS"] = "1"
        tok = task_tokenizer(self.tokenizer)
        batch, chars = [], 0
        for doc in data or ():
            batch.append(doc)
            chars += len(doc.text)
            if chars >= self.batch_chars:
                yield from self._flush(tok, batch)
                batch, chars = [], 0
        if batch:
            yield from self._flush(tok, batch)
