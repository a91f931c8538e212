"""What a prepared dataset holds, whichever format it is in: `zaya data inspect`'s summary, and the one
place that tells a zarr dataset from a Megatron prefix (convert.py asks it too).
"""

from pathlib import Path

import numpy as np

from zaya_train.data.megatron_indexed import MegatronIndexed, is_megatron_prefix, megatron_prefix
from zaya_train.data.shards import SPLITS, TokenShard
from zaya_train.errors import ZayaTrainError

FORMATS = ("zarr", "megatron")


def dataset_format(path: Path | str) -> str:
    """`zarr` (a prepared shard or dataset folder) or `megatron` (a `.bin/.idx` prefix); else one clear line."""
    path = Path(path)
    if path.is_dir():
        return "zarr"
    if is_megatron_prefix(path):
        return "megatron"
    prefix = megatron_prefix(path)
    raise ZayaTrainError(
        f"{path} is neither a prepared zarr dataset (a folder `zaya data prepare` wrote) nor a Megatron "
        f"prefix (no {prefix}.bin or {prefix}.idx); check the path"
    )


def describe(path: Path | str) -> dict:
    """{format, documents, tokens, dtype, first_document: [ids]} (+ per split counts and the tokenizer for
    zarr): counts from the index; the first document from a memory map (megatron) or its split, opened as
    training opens it (read whole under 1 GiB)."""
    fmt = dataset_format(path)
    if fmt == "megatron":
        data = MegatronIndexed(path)
        first = data.document(0) if data.num_documents else np.zeros(0, data.dtype)
        return {
            "format": fmt,
            "path": str(data.prefix),
            "documents": data.num_documents,
            "tokens": data.num_tokens,
            "dtype": str(data.dtype),
            "first_document": [int(i) for i in first],
        }
    shard = TokenShard(Path(path))
    first: list[int] = []
    for split in SPLITS:
        if shard.num_docs[split]:
            stream = shard.split(split)
            first = [int(i) for i in stream.tokens[int(stream.doc_offsets[0]) : int(stream.doc_offsets[1])]]
            break
    return {
        "format": fmt,
        "path": str(path),
        "documents": sum(shard.num_docs.values()),
        "tokens": sum(shard.num_tokens.values()),
        "dtype": "uint32",
        "first_document": first,
        "splits": {s: {"documents": shard.num_docs[s], "tokens": shard.num_tokens[s]} for s in SPLITS},
        "tokenizer": shard.tokenizer,
    }
