"""Which documents of a Megatron prefix are held out for validation: the split its notes record, or a hash of
each document's index (`corpus.is_validation(str(index))`, the rule text documents follow by name), the same on
every machine and run. The hash costs a sha256 per document (about 2.5 s per million on a 2-core CPU), so a
training run keeps the result in its data cache, keyed by the index file's identity and the fraction.
"""

import hashlib
import json
from pathlib import Path

import numpy as np
from zaya_config.atomic import write_atomic

from zaya_train.data.corpus import is_validation
from zaya_train.data.megatron_indexed import MegatronIndexed, idx_path
from zaya_train.data.megatron_notes import notes_path, read_notes
from zaya_train.errors import ZayaTrainError


def hashed_mask(count: int, val_fraction: float) -> np.ndarray:
    """Document `i` is held out when `is_validation(str(i), val_fraction)`."""
    return np.fromiter((is_validation(str(i), val_fraction) for i in range(count)), bool, count)


def _cached(data: MegatronIndexed, val_fraction: float, cache: Path) -> np.ndarray:
    stat = idx_path(data.prefix).stat()
    identity = [str(data.prefix.resolve()), stat.st_size, stat.st_mtime_ns, data.num_documents, val_fraction]
    key = hashlib.sha256(json.dumps(identity).encode()).hexdigest()[:16]
    path = Path(cache) / f"megatron-split-{data.prefix.name}-{key}.npy"
    if path.is_file():
        return np.unpackbits(np.load(path), count=data.num_documents).astype(bool)
    mask = hashed_mask(data.num_documents, val_fraction)
    write_atomic(path, lambda handle: np.save(handle, np.packbits(mask)))
    return mask


def validation_mask(data: MegatronIndexed, val_fraction: float, cache: Path | None = None) -> np.ndarray:
    """Which documents are held out (bool per document): the notes' split, else the hash (kept in `cache`)."""
    notes = read_notes(data.prefix)
    if notes is not None and notes.splits is not None:
        if sum(notes.splits.values()) != data.num_documents:
            raise ZayaTrainError(
                f"{notes_path(data.prefix)} counts {sum(notes.splits.values())} documents, the prefix has "
                f"{data.num_documents}; the notes belong to other files: delete them"
            )
        return np.arange(data.num_documents) >= notes.splits["train"]
    return hashed_mask(data.num_documents, val_fraction) if cache is None else _cached(data, val_fraction, cache)
