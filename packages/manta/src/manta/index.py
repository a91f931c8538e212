"""Exact cosine search over the catalog, split by base family so candidates are compatible by construction.

Embeddings are unit-norm, so cosine is a matrix product. Adapters of each base family sit in their own
contiguous matrix (A_f rows x D), checkpoints in another; one query batch (Q x D) costs one GEMM per
family plus an `argpartition` per row. Shapes: Q queries, D embedding dim, A adapters of a family.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from manta.catalog import Catalog, CatalogEntry
from manta.errors import MantaError


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

    def __init__(self, catalog: Catalog, embeddings_ND: np.ndarray) -> None:
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
        scores_QA = queries_QD @ self.family_matrix[family].T
        cols_QK, vals_QK = topk_rows(scores_QA, k)
        return Candidates(self.family_positions[family][cols_QK], vals_QK)

    def checkpoint_scores(self, queries_QD: np.ndarray) -> np.ndarray:
        """Cosine of each query row with every checkpoint (Q x number of checkpoints)."""
        return queries_QD @ self.embeddings_ND[self.checkpoint_positions].T
