"""Exact cosine search over the catalog, split by base family so candidates are compatible by construction.

Embeddings are unit-norm, so cosine is a matrix product. Adapters of each base family sit in their own
contiguous matrix (A_f rows x D), checkpoints in another; one query batch (Q x D) costs one GEMM per
family plus an `argpartition` per row. Shapes: Q queries, D embedding dim, A adapters of a family.

Large families are searched in two passes that stay exact: a bfloat16 GEMM (half the bytes of float32,
and the matrix units of recent CPUs run it) gives every score within `BF16_SCORE_ERROR` x |q| |e|
of the true one (inputs rounded to 8-bit significands: 2u; fp32 accumulation; output rounded: u;
u = 2^-8), so every row whose approximate score is within twice that of the k-th approximate score
is rescored in float32 and the exact top k is taken from those.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from manta.catalog import Catalog, CatalogEntry
from manta.errors import MantaError

BF16_SCORE_ERROR = 3 * 2.0**-8 + 1e-4  # |bf16 score - exact| / (|q| |e|), bound derived above
PREFILTER_MIN_ROWS = 4096  # below this a float32 GEMM is as cheap as the two passes


@dataclass(frozen=True)
class Candidates:
    """Top-k hits per query row: catalog positions (Q x k) and their cosine scores (Q x k), best first."""

    positions_QK: np.ndarray
    scores_QK: np.ndarray


def topk_rows(scores_QA: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Column indices and values of the k largest entries of each row, sorted descending."""
    k = min(k, scores_QA.shape[1])
    if k == 0:
        empty = np.zeros((scores_QA.shape[0], 0))
        return empty.astype(np.int64), empty.astype(np.float32)
    part_QK = np.argpartition(-scores_QA, k - 1, axis=1)[:, :k]
    vals_QK = np.take_along_axis(scores_QA, part_QK, axis=1)
    order_QK = np.argsort(-vals_QK, axis=1, kind="stable")
    return np.take_along_axis(part_QK, order_QK, axis=1), np.take_along_axis(vals_QK, order_QK, axis=1)


class CatalogIndex:
    """A catalog with its embeddings, searchable by exact cosine per base family."""

    def __init__(self, catalog: Catalog, embeddings_ND: np.ndarray, bf16_prefilter: bool = True) -> None:
        if embeddings_ND.shape[0] != len(catalog):
            raise MantaError(
                f"{embeddings_ND.shape[0]} embeddings for a catalog of {len(catalog)} records; "
                "delete the embedding cache file and rebuild"
            )
        self.catalog = catalog
        self.embeddings_ND = np.ascontiguousarray(embeddings_ND, dtype=np.float32)
        self.checkpoint_positions = np.array([i for i, e in enumerate(catalog.entries) if not e.is_adapter])
        self.families = sorted({e.base_family for e in catalog.checkpoints})
        self.family_positions: dict[str, np.ndarray] = {}
        self.family_matrix: dict[str, np.ndarray] = {}
        for family in self.families:
            rows = np.array(
                [i for i, e in enumerate(catalog.entries) if e.is_adapter and e.base_family == family], dtype=np.int64
            )
            self.family_positions[family] = rows
            self.family_matrix[family] = (
                np.ascontiguousarray(self.embeddings_ND[rows])
                if len(rows)
                else np.zeros((0, self.embeddings_ND.shape[1]), dtype=np.float32)
            )

        self._bf16: dict[str, object] = {}
        self._max_norm: dict[str, float] = {}
        if bf16_prefilter:
            self._prepare_prefilter()

    def _prepare_prefilter(self) -> None:
        """bf16 copies of the large families; torch (2-3 s to import) only where a family is large."""
        large = {f: m for f, m in self.family_matrix.items() if len(m) >= PREFILTER_MIN_ROWS}
        if not large:
            return
        try:
            import torch
        except ImportError:  # the float32 path is exact on its own
            return
        for family, matrix in large.items():
            self._bf16[family] = torch.from_numpy(matrix).to(torch.bfloat16)
            self._max_norm[family] = float(np.linalg.norm(matrix, axis=1).max())

    def _prefiltered_topk(self, queries_QD: np.ndarray, k: int, family: str) -> tuple[np.ndarray, np.ndarray]:
        """Exact top-k by a bf16 pass with a proven error bound, then float32 rescoring of the survivors."""
        import torch

        matrix = self.family_matrix[family]
        approx_QA = (
            (torch.from_numpy(np.ascontiguousarray(queries_QD)).to(torch.bfloat16) @ self._bf16[family].T)
            .float()
            .numpy()
        )
        rows = matrix.shape[0]
        k = min(k, rows)
        kth_Q = np.partition(approx_QA, rows - k, axis=1)[:, rows - k]
        margin_Q = 2 * BF16_SCORE_ERROR * self._max_norm[family] * np.linalg.norm(queries_QD, axis=1)
        cols_QK = np.empty((len(queries_QD), k), dtype=np.int64)
        vals_QK = np.empty((len(queries_QD), k), dtype=np.float32)
        for q in range(len(queries_QD)):
            survivors = np.flatnonzero(approx_QA[q] >= kth_Q[q] - margin_Q[q])
            exact = matrix[survivors] @ queries_QD[q]
            order = np.argsort(-exact, kind="stable")[:k]
            cols_QK[q], vals_QK[q] = survivors[order], exact[order]
        return cols_QK, vals_QK

    def entry(self, position: int) -> CatalogEntry:
        return self.catalog.entries[int(position)]

    def vector(self, entry_id: str) -> np.ndarray:
        """The embedding of one record."""
        return self.embeddings_ND[self.catalog.position(entry_id)]

    def search_adapters(self, queries_QD: np.ndarray, k: int, family: str) -> Candidates:
        """The k adapters of `family` most similar to each query row."""
        if family not in self.family_matrix:
            raise MantaError(
                f"base family {family!r} is not in catalog {self.catalog.source}; "
                f"allowed: one of {', '.join(self.families)}"
            )
        if family in self._bf16 and k > 0:
            cols_QK, vals_QK = self._prefiltered_topk(queries_QD, k, family)
        else:
            cols_QK, vals_QK = topk_rows(queries_QD @ self.family_matrix[family].T, k)
        return Candidates(self.family_positions[family][cols_QK], vals_QK)

    def checkpoint_scores(self, queries_QD: np.ndarray) -> np.ndarray:
        """Cosine of each query row with every checkpoint (Q x number of checkpoints)."""
        return queries_QD @ self.embeddings_ND[self.checkpoint_positions].T
