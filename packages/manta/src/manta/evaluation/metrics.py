"""Plan-level metrics, computed the same way for any system: alignment, diversity, constraint fit, quality.

Alignment is concept coverage: the share of the prompt's concepts that some adapter of the plan serves
(cosine >= `coverage_threshold`, measured with the catalog's own embeddings). Diversity is the mean
pairwise Jaccard distance between the model sets of a batch. Expected quality is a documented proxy,
not a measurement: the base's quality prior, moved towards each on-topic adapter's prior by its weight,
lowered by off-topic adapters (they inject unrelated content) and by stacking many adapters, and 0 when
the plan does not fit the machine (it cannot run there).
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations

import numpy as np

from manta.catalog import Catalog
from manta.concepts import KeywordDecomposer
from manta.embedding import TextEmbedder
from manta.index import CatalogIndex
from manta.limits import ResolvedLimits
from manta.plan import CompositionPlan, check_plan, jaccard_distance

OFF_TOPIC_PENALTY = 0.15
STACKING_FREE = 3
STACKING_PENALTY = 0.05


@dataclass(frozen=True)
class BatchMetrics:
    """Metrics of one batch of plans for one prompt."""

    alignment: float
    diversity: float
    quality: float
    constraint_satisfaction: float
    adapters: float


def batch_diversity(plans: list[CompositionPlan]) -> float:
    """Mean pairwise Jaccard distance of the plans' model sets (0 for a single plan)."""
    pairs = list(combinations([p.elements for p in plans], 2))
    return float(np.mean([jaccard_distance(a, b) for a, b in pairs])) if pairs else 0.0


class PlanEvaluator:
    """Scores plans against a prompt's concepts and the machine's limits, independent of who made them."""

    def __init__(
        self,
        index: CatalogIndex,
        embedder: TextEmbedder,
        limits: ResolvedLimits,
        coverage_threshold: float = 0.4,
        max_concepts: int = 4,
    ) -> None:
        self.index, self.embedder, self.limits = index, embedder, limits
        self.coverage_threshold = coverage_threshold
        self.decomposer = KeywordDecomposer(max_concepts)
        self._concepts: dict[str, np.ndarray] = {}

    @property
    def catalog(self) -> Catalog:
        return self.index.catalog

    def concept_vectors(self, prompt: str) -> np.ndarray:
        if prompt not in self._concepts:
            self._concepts[prompt] = self.embedder.embed([c.text for c in self.decomposer.decompose(prompt)])
        return self._concepts[prompt]

    def _adapter_fit(self, plan: CompositionPlan) -> np.ndarray:
        """Cosine of each adapter (rows) with each concept (columns)."""
        concepts_CD = self.concept_vectors(plan.prompt)
        if not plan.adapters:
            return np.zeros((0, concepts_CD.shape[0]))
        vectors_AD = np.stack([self.index.vector(a.id) for a in plan.adapters])
        return vectors_AD @ concepts_CD.T

    def alignment(self, plan: CompositionPlan) -> float:
        fit_AC = self._adapter_fit(plan)
        if fit_AC.shape[0] == 0:
            return 0.0
        return float((fit_AC.max(axis=0) >= self.coverage_threshold).mean())

    def fits(self, plan: CompositionPlan) -> bool:
        return not check_plan(plan, self.catalog, self.limits).violations(self.limits)

    def quality(self, plan: CompositionPlan) -> float:
        if not self.fits(plan):
            return 0.0
        quality = self.catalog[plan.base_id].quality
        on_topic = self._adapter_fit(plan).max(axis=1, initial=-1.0) >= self.coverage_threshold
        for choice, relevant in zip(plan.adapters, on_topic, strict=True):
            prior = self.catalog[choice.id].quality
            quality += choice.weight * 0.5 * (prior - quality) if relevant else -OFF_TOPIC_PENALTY * choice.weight
        quality -= STACKING_PENALTY * max(0, len(plan.adapters) - STACKING_FREE)
        return float(np.clip(quality, 0.0, 1.0))

    def batch(self, plans: list[CompositionPlan]) -> BatchMetrics:
        """All metrics of one batch (means over its plans, diversity across them)."""
        return BatchMetrics(
            alignment=float(np.mean([self.alignment(p) for p in plans])),
            diversity=batch_diversity(plans),
            quality=float(np.mean([self.quality(p) for p in plans])),
            constraint_satisfaction=float(np.mean([self.fits(p) for p in plans])),
            adapters=float(np.mean([len(p.adapters) for p in plans])),
        )
