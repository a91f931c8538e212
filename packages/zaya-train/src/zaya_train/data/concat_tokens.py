"""Several token arrays read as one: a prepared dataset's shards, one stream per split, in task order.

Why a view and not `np.concatenate`: a split larger than memory stays on disk (zarr), and a window that
crosses a shard border is read from both shards.
"""

from bisect import bisect_right

import numpy as np


class ConcatTokens:
    """Read-only 1-D concatenation of arrays that support `shape` and slicing (numpy or zarr)."""

    def __init__(self, parts: list) -> None:
        self.parts = [p for p in parts if p.shape[0]]
        self.starts = [0]
        for part in self.parts:
            self.starts.append(self.starts[-1] + int(part.shape[0]))
        self.dtype = np.dtype("uint32")

    @property
    def shape(self) -> tuple[int]:
        return (self.starts[-1],)

    def __len__(self) -> int:
        return self.starts[-1]

    def __getitem__(self, key: slice) -> np.ndarray:
        if not isinstance(key, slice) or key.step not in (None, 1):
            raise TypeError("ConcatTokens supports contiguous slices only")
        start, stop, _ = key.indices(self.starts[-1])
        pieces = []
        index = bisect_right(self.starts, start) - 1
        while start < stop and index < len(self.parts):
            base = self.starts[index]
            end = min(stop, self.starts[index + 1])
            pieces.append(np.asarray(self.parts[index][start - base : end - base]))
            start, index = end, index + 1
        return np.concatenate(pieces) if pieces else np.zeros(0, dtype=self.dtype)
