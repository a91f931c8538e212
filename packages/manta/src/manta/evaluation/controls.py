"""Controls every evaluation runs next to the real opponents: if one of them wins, the judge is suspect.

- `PromptBlindControl` ignores the prompt: no adapters, and the checkpoints that fit taken in turn, one per
  image (the rotation that made the old plan-metric judge call it diverse and high quality).
- `RandomRelevantControl` uses manta's own retrieval but picks at random: a random fitting checkpoint, and
  for each concept one adapter drawn uniformly from those above the relevance threshold, within the
  machine's adapter limit. It is what a composer with no ranking and no solver would do.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from manta.composer import Composer
from manta.concepts import check_prompt
from manta.limits import ResolvedLimits, plan_cost
from manta.plan import CompositionPlan, plan_from_entries


def fitting_checkpoints(composer: Composer, limits: ResolvedLimits) -> list:
    """Checkpoints that fit `limits` alone, in catalog order (all of them if none does)."""
    fits = [e for e in composer.catalog.checkpoints if not plan_cost(e, [], limits).violations(limits)]
    return fits or list(composer.catalog.checkpoints)


@dataclass
class PromptBlindControl:
    """No adapters; image i uses the i-th fitting checkpoint (rotating from a seeded start)."""

    composer: Composer
    name: str = "prompt-blind"

    def compose(self, prompt: str, limits: ResolvedLimits, batch: int = 1, seed: int = 0) -> list[CompositionPlan]:
        prompt = check_prompt(prompt)
        bases = fitting_checkpoints(self.composer, limits)
        start = int(np.random.default_rng(seed).integers(len(bases)))
        return [plan_from_entries(prompt, bases[(start + i) % len(bases)], [], (), limits) for i in range(batch)]


@dataclass
class RandomRelevantControl:
    """A random fitting checkpoint and, per concept, a random adapter above `threshold` (default: manta's)."""

    composer: Composer
    threshold: float | None = None
    name: str = "random-relevant"

    def compose(self, prompt: str, limits: ResolvedLimits, batch: int = 1, seed: int = 0) -> list[CompositionPlan]:
        found = self.composer.retrieve(prompt, self.composer.fitting_families(limits))
        threshold = self.composer.settings.min_relevance if self.threshold is None else self.threshold
        names = tuple(c.text for c in found.concepts)
        bases = fitting_checkpoints(self.composer, limits)
        rng = np.random.default_rng(seed)
        plans = []
        for _ in range(batch):
            base = bases[int(rng.integers(len(bases)))]
            chosen = []
            for c, name in enumerate(names):
                pool = [
                    k
                    for k in found.candidates
                    if k.concept == c
                    and k.relevance >= threshold
                    and self.composer.index.entry(k.position).base_family == base.base_family
                    and k.position not in {p.position for p, _ in chosen}
                ]
                if pool:
                    chosen.append((pool[int(rng.integers(len(pool)))], name))
            rng.shuffle(chosen)
            chosen = chosen[: limits.max_adapters]
            adapters = []
            for cand, name in chosen:
                entry = self.composer.index.entry(cand.position)
                adapters.append((entry, name, entry.weight_max, cand.relevance))
            plans.append(plan_from_entries(found.prompt, base, adapters, names, limits))
        return plans
