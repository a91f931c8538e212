"""Retrieval and ranking: per-concept adapter candidates with a triplet-style score, and base scores.

A candidate's score rewards cosine to its own concept (the anchor-positive pair) and subtracts a share
of its best cosine to any other concept (the anchor-negative pairs), so an adapter that fits the whole
prompt vaguely loses to one that fits one concept sharply, and one adapter is not claimed by every
concept. Checkpoints are scored by the prompt's domain (cosine to the whole prompt) and style (cosine to
the style concepts), plus a prior on their quality.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from manta.concepts import Concept
from manta.config import MantaConfig
from manta.index import CatalogIndex


@dataclass(frozen=True)
class Candidate:
    """An adapter that may serve concept `concept` (index into the concept list)."""

    concept: int
    position: int  # catalog row
    relevance: float  # cosine to its own concept
    score: float  # triplet score: relevance - separation x max cosine to the other concepts


@dataclass(frozen=True)
class Retrieval:
    """Everything the solver needs about one prompt."""

    prompt: str
    concepts: list[Concept]
    prompt_D: np.ndarray
    concepts_CD: np.ndarray
    candidates: list[Candidate]
    base_scores: dict[int, float]  # checkpoint catalog row -> score


def triplet_scores(
    adapters_ND: np.ndarray, own: np.ndarray, concepts_CD: np.ndarray, separation: float
) -> tuple[np.ndarray, np.ndarray]:
    """Relevance to the own concept and triplet score for N adapters; `own[n]` is adapter n's concept."""
    sims_NC = adapters_ND @ concepts_CD.T
    relevance_N = sims_NC[np.arange(len(own)), own]
    if concepts_CD.shape[0] == 1:
        return relevance_N, relevance_N.copy()
    others_NC = sims_NC.copy()
    others_NC[np.arange(len(own)), own] = -np.inf
    return relevance_N, relevance_N - separation * others_NC.max(axis=1)


def score_bases(
    index: CatalogIndex, prompt_D: np.ndarray, concepts: list[Concept], concepts_CD: np.ndarray, settings: MantaConfig
) -> dict[int, float]:
    """Score every checkpoint for the prompt's domain and style and its quality prior."""
    domain_B = index.checkpoint_scores(prompt_D[None, :])[0]
    styles = [i for i, c in enumerate(concepts) if c.kind == "style"]
    fit_B = domain_B
    if styles:
        style_B = index.checkpoint_scores(concepts_CD[styles]).max(axis=0)
        fit_B = 0.5 * (domain_B + style_B)
    quality_B = np.array([index.entry(p).quality for p in index.checkpoint_positions])
    total_B = settings.base_prompt_weight * fit_B + settings.base_quality_weight * quality_B
    return {int(p): float(s) for p, s in zip(index.checkpoint_positions, total_B, strict=True)}


def retrieve(
    index: CatalogIndex,
    prompt: str,
    concepts: list[Concept],
    prompt_D: np.ndarray,
    concepts_CD: np.ndarray,
    settings: MantaConfig,
    families: set[str] | None = None,
) -> Retrieval:
    """Candidates per concept for every base family, scored and filtered, plus the base scores."""
    candidates: list[Candidate] = []
    count = len(concepts)
    for family in index.families:
        if families is not None and family not in families:
            continue  # no checkpoint of this family fits the limits: its adapters could never be chosen
        hits = index.search_adapters(concepts_CD, settings.candidates_per_concept, family)
        k = hits.positions_QK.shape[1]
        if k == 0:
            continue
        positions_N = hits.positions_QK.reshape(-1)
        own_N = np.repeat(np.arange(count), k)
        relevance_N, score_N = triplet_scores(
            index.embeddings_ND[positions_N], own_N, concepts_CD, settings.separation_weight
        )
        keep = np.flatnonzero((relevance_N >= settings.min_relevance) & (score_N > settings.adapter_penalty))
        candidates.extend(
            Candidate(int(own_N[i]), int(positions_N[i]), float(relevance_N[i]), float(score_N[i])) for i in keep
        )
    base_scores = score_bases(index, prompt_D, concepts, concepts_CD, settings)
    return Retrieval(prompt, concepts, prompt_D, concepts_CD, candidates, base_scores)
