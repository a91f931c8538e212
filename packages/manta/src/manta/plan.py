"""Composition plans: what one image is generated with (base, adapters with weights, final prompt text)."""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import asdict, dataclass

from manta.catalog import Catalog, CatalogEntry
from manta.errors import MantaError
from manta.index import CatalogIndex
from manta.limits import PlanCost, ResolvedLimits, plan_cost
from manta.solver import Selection


@dataclass(frozen=True)
class AdapterChoice:
    """One adapter of a plan, the concept it serves and the LoRA scale it is applied at."""

    id: str
    concept: str
    weight: float
    relevance: float


@dataclass(frozen=True)
class CompositionPlan:
    """A base checkpoint and adapters for one image, with its costs on the target hardware."""

    prompt: str
    prompt_text: str  # the prompt with the adapters' trigger words appended
    base_id: str
    base_family: str
    adapters: tuple[AdapterChoice, ...]
    concepts: tuple[str, ...]
    hardware: str
    vram_bytes: int
    latency_s: float
    price: float
    relevance: float
    llm_tokens: int = 0

    @property
    def elements(self) -> frozenset[str]:
        """The set of models the plan loads (base and adapters): what diversity is measured on."""
        return frozenset([self.base_id, *(a.id for a in self.adapters)])

    def to_dict(self) -> dict:
        return asdict(self)


def jaccard_distance(a: frozenset[str], b: frozenset[str]) -> float:
    """1 - |a & b| / |a | b| (0 for identical sets)."""
    union = a | b
    return 1.0 - len(a & b) / len(union) if union else 0.0


def adapter_weights(selection: Selection, index: CatalogIndex) -> dict[int, float]:
    """LoRA scales: within each adapter's range by its score relative to the concept's best, shared by
    sqrt(adapters on that concept) so stacking two adapters on one concept does not double its strength."""
    by_concept = defaultdict(list)
    for pick in selection.picks:
        by_concept[pick.concept].append(pick)
    weights = {}
    for picks in by_concept.values():
        best = max(p.score for p in picks)
        share = len(picks) ** 0.5
        for pick in picks:
            entry = index.entry(pick.position)
            raw = entry.weight_min + (entry.weight_max - entry.weight_min) * (pick.score / best)
            weights[pick.position] = round(min(entry.weight_max, max(entry.weight_min, raw / share)), 3)
    return weights


def plan_from_selection(
    selection: Selection,
    index: CatalogIndex,
    prompt: str,
    concepts: list[str],
    limits: ResolvedLimits,
    llm_tokens: int = 0,
) -> CompositionPlan:
    """Turn a solver selection into a plan with weights, trigger words and costs; its relevance is the
    solver's objective (the picks' scores)."""
    weights = adapter_weights(selection, index)
    picks = sorted(selection.picks, key=lambda p: (p.concept, -p.score))
    adapters = [(index.entry(p.position), concepts[p.concept], weights[p.position], p.relevance) for p in picks]
    return plan_from_entries(
        prompt, index.entry(selection.base), adapters, tuple(concepts), limits,
        relevance=sum(p.score for p in picks), llm_tokens=llm_tokens,
    )  # fmt: skip


def plan_from_entries(
    prompt: str,
    base: CatalogEntry,
    adapters: list[tuple[CatalogEntry, str, float, float]],
    concepts: tuple[str, ...],
    limits: ResolvedLimits,
    *,
    relevance: float | None = None,
    llm_tokens: int = 0,
) -> CompositionPlan:
    """A plan from chosen catalog entries: (adapter, concept, weight, relevance) each; costs against `limits`
    (reported, not enforced: baselines and controls build their plans with this). The plan's relevance is
    `relevance`, else the adapters' relevances summed."""
    entries = [e for e, _, _, _ in adapters]
    cost = plan_cost(base, entries, limits)
    triggers = [w for e in entries for w in e.trigger_words if w.lower() not in prompt.lower()]
    return CompositionPlan(
        prompt=prompt,
        prompt_text=", ".join([prompt, *dict.fromkeys(triggers)]),
        base_id=base.id,
        base_family=base.base_family,
        adapters=tuple(
            AdapterChoice(e.id, concept, round(min(e.weight_max, max(e.weight_min, w)), 3), round(r, 4))
            for e, concept, w, r in adapters
        ),
        concepts=concepts,
        hardware=limits.name,
        vram_bytes=cost.vram_bytes,
        latency_s=cost.latency_s,
        price=cost.price,
        relevance=round(sum(r for _, _, _, r in adapters) if relevance is None else relevance, 4),
        llm_tokens=llm_tokens,
    )


def check_families(plan: CompositionPlan, catalog: Catalog) -> tuple[CatalogEntry, list[CatalogEntry]]:
    """The plan's base and adapters from the catalog; raise when an adapter is for another base family."""
    base = catalog[plan.base_id]
    if base.is_adapter:
        raise MantaError(f"plan base {plan.base_id!r} is an adapter, not a checkpoint")
    adapters = [catalog[a.id] for a in plan.adapters]
    for adapter in adapters:
        if adapter.base_family != base.base_family:
            raise MantaError(
                f"adapter {adapter.id!r} is for base family {adapter.base_family!r} but the plan's base "
                f"{base.id!r} is {base.base_family!r}; pick a {base.base_family} adapter or another base"
            )
    return base, adapters


def check_plan(plan: CompositionPlan, catalog: Catalog, limits: ResolvedLimits) -> PlanCost:
    """Recompute a plan's cost from the catalog (after checking its base families)."""
    base, adapters = check_families(plan, catalog)
    return plan_cost(base, adapters, limits)


def plans_to_json(plans: list[CompositionPlan]) -> str:
    return json.dumps([p.to_dict() for p in plans], indent=1)
