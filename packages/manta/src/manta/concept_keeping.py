"""What keeps every plan of a batch faithful to the prompt, however diverse the batch is.

Three filters run before the solver, so the optimum and every diverse alternative obey them alike:
- per concept and base family, only adapters whose relevance is at least `concept_relevance_floor` x the
  best relevance of that concept in that family stay candidates (no oil-impasto adapter for "watercolor"
  because it was the next most novel one);
- when the prompt names a style, only checkpoints whose style fit (cosine to the style concepts) is at least
  `style_fit_floor` x the best style fit among checkpoints that fit the machine stay (no photoreal
  checkpoint for an ukiyo-e print);
- an adapter is dropped unless `concept_relevance_floor` x its relevance exceeds the best cosine of a fitting
  checkpoint of its family to the same concept: that checkpoint draws the concept by itself (no line-art
  LoRA on top of the pixel-art checkpoint for "pixel art", no star LoRA for the base's "purple circle").
The diversity sampler then rejects any plan that covers fewer concepts than the optimum does.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import replace

import numpy as np

from manta.index import CatalogIndex
from manta.retrieval import Retrieval


def keep_relevant_candidates(retrieval: Retrieval, index: CatalogIndex, floor: float) -> Retrieval:
    """Candidates within `floor` of their (concept, family)'s best relevance."""
    best: dict[tuple[int, str], float] = defaultdict(lambda: -np.inf)
    for cand in retrieval.candidates:
        key = (cand.concept, index.entry(cand.position).base_family)
        best[key] = max(best[key], cand.relevance)
    kept = [
        c
        for c in retrieval.candidates
        if c.relevance >= floor * best[(c.concept, index.entry(c.position).base_family)] - 1e-9
    ]
    return replace(retrieval, candidates=kept)


def style_fit(retrieval: Retrieval, index: CatalogIndex) -> dict[int, float] | None:
    """Each checkpoint's best cosine to the prompt's style concepts (None when the prompt names no style)."""
    styles = [i for i, c in enumerate(retrieval.concepts) if c.kind == "style"]
    if not styles:
        return None
    scores_SB = index.checkpoint_scores(retrieval.concepts_CD[styles])
    return {int(p): float(s) for p, s in zip(index.checkpoint_positions, scores_SB.max(axis=0), strict=True)}


def keep_suitable_bases(retrieval: Retrieval, index: CatalogIndex, fitting: set[int], floor: float) -> Retrieval:
    """Drop checkpoints whose style fit is below `floor` x the best fit among the `fitting` checkpoints."""
    fit = style_fit(retrieval, index)
    if fit is None:
        return retrieval
    best = max((fit[p] for p in fitting if p in fit), default=None)
    if best is None or best <= 0:
        return retrieval
    scores = {p: s for p, s in retrieval.base_scores.items() if p not in fitting or fit[p] >= floor * best - 1e-9}
    return replace(retrieval, base_scores=scores)


def covered_concepts(picks) -> frozenset[int]:
    return frozenset(p.concept for p in picks)


def drop_adapters_beaten_by_checkpoints(
    retrieval: Retrieval, index: CatalogIndex, fitting: set[int], floor: float
) -> Retrieval:
    """Drop candidates that a fitting checkpoint of their family already serves about as well.

    A candidate stays only if `floor` x its relevance exceeds the best cosine of a fitting same-family
    checkpoint to its concept: the checkpoint draws a plain circle or the pixel-art style by itself, and an
    adapter that is barely (or not) more relevant than the checkpoint only pulls the image elsewhere.
    """
    positions = [int(p) for p in index.checkpoint_positions if int(p) in fitting]
    if not positions or not retrieval.candidates:
        return retrieval
    scores_BC = index.embeddings_ND[positions] @ retrieval.concepts_CD.T
    best: dict[tuple[str, int], float] = {}
    for row, p in enumerate(positions):
        family = index.entry(p).base_family
        for c in range(scores_BC.shape[1]):
            best[(family, c)] = max(best.get((family, c), -np.inf), float(scores_BC[row, c]))
    kept = [
        c
        for c in retrieval.candidates
        if floor * c.relevance > best.get((index.entry(c.position).base_family, c.concept), -np.inf)
    ]
    return replace(retrieval, candidates=kept)
