"""The composition pipeline: prompt -> concepts -> candidates -> exact solve under limits -> N diverse plans."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from manta.catalog import Catalog, load_catalog, with_prices
from manta.concept_keeping import (
    drop_adapters_beaten_by_checkpoints,
    keep_relevant_candidates,
    keep_suitable_bases,
)
from manta.concepts import Decomposer, KeywordDecomposer, check_prompt
from manta.config import MantaConfig
from manta.diversity import diverse_selections
from manta.embedding import TextEmbedder, catalog_embeddings
from manta.index import CatalogIndex
from manta.limits import HardwareLimits, ResolvedLimits, plan_cost
from manta.plan import CompositionPlan, plan_from_selection
from manta.retrieval import Retrieval, retrieve
from manta.solver import CompositionProblem


@dataclass
class Composer:
    """Composes plans for prompts over one indexed catalog; reuse it across prompts (the model stays loaded)."""

    index: CatalogIndex
    embedder: TextEmbedder
    settings: MantaConfig = field(default_factory=MantaConfig)
    decomposer: Decomposer | None = None

    def __post_init__(self) -> None:
        if self.decomposer is None:
            self.decomposer = KeywordDecomposer(self.settings.max_concepts)

    @property
    def catalog(self) -> Catalog:
        return self.index.catalog

    def retrieve(self, prompt: str, families: set[str] | None = None) -> Retrieval:
        """Decompose, embed prompt and concepts in one batch, and fetch scored candidates (of `families`)."""
        prompt = check_prompt(prompt)
        concepts = self.decomposer.decompose(prompt)
        vectors = self.embedder.embed([prompt, *(c.text for c in concepts)])
        return retrieve(self.index, prompt, concepts, vectors[0], vectors[1:], self.settings, families)

    def fitting_families(self, limits: ResolvedLimits) -> set[str] | None:
        """Base families with a checkpoint that fits `limits` alone (None if none: the solver names the limit)."""
        fits = {e.base_family for e in self.catalog.checkpoints if not plan_cost(e, [], limits).violations(limits)}
        return fits or None

    def compose(
        self, prompt: str, limits: ResolvedLimits, batch: int | None = None, seed: int | None = None
    ) -> list[CompositionPlan]:
        """`batch` plans (default: settings.batch) for `prompt` that fit `limits`, as different as possible."""
        if limits.cost_budget is None and self.settings.cost_budget is not None:
            limits = limits.with_cost_budget(self.settings.cost_budget)
        tokens_before = self.decomposer.usage.total
        found = self.retrieve(prompt, self.fitting_families(limits))
        tokens = self.decomposer.usage.total - tokens_before
        found = keep_relevant_candidates(found, self.index, self.settings.concept_relevance_floor)
        fitting = {
            int(p)
            for p in self.index.checkpoint_positions
            if not plan_cost(self.index.entry(p), [], limits).violations(limits)
        }
        found = keep_suitable_bases(found, self.index, fitting, self.settings.style_fit_floor)
        found = drop_adapters_beaten_by_checkpoints(found, self.index, fitting, self.settings.concept_relevance_floor)
        problem = CompositionProblem(
            self.index,
            found,
            limits,
            self.settings.adapters_per_concept,
            self.settings.coverage_bonus,
            self.settings.adapter_penalty,
        )
        n = batch or self.settings.batch
        selections = diverse_selections(
            problem,
            n,
            self.settings.seed if seed is None else seed,
            self.settings.mask_probability,
            self.settings.pool_factor,
            self.settings.min_relative_relevance,
        )
        names = [c.text for c in found.concepts]
        return [plan_from_selection(s, self.index, found.prompt, names, limits, tokens) for s in selections]


def build_index(
    catalog: Catalog, embedder: TextEmbedder, cache_dir: str | Path | None, progress: bool = False
) -> CatalogIndex:
    """Embed (or read cached embeddings of) a catalog and index it."""
    return CatalogIndex(catalog, catalog_embeddings(catalog, embedder, cache_dir, progress=progress))


def build_composer(settings: MantaConfig, embedder: TextEmbedder | None = None, progress: bool = False) -> Composer:
    """The one builder: catalog + embedding model + cached embeddings -> a ready Composer."""
    settings.validate()
    catalog = load_catalog(settings.catalog)  # a bad catalog fails before the model loads
    if settings.prices:
        catalog = with_prices(catalog, dict(settings.prices))
    embedder = embedder or TextEmbedder(settings.model_path)
    index = build_index(catalog, embedder, settings.cache_dir, progress=progress)
    return Composer(index, embedder, settings)


def limits_from_config(hardware: HardwareLimits | Any, cost_budget: float | None = None) -> ResolvedLimits:
    """Resolved limits from a validated `HardwareLimits` (a config object or a preset name)."""
    if isinstance(hardware, str):
        from manta.presets import hardware_limits

        hardware = hardware_limits(hardware)
    return hardware.resolved().with_cost_budget(cost_budget)
