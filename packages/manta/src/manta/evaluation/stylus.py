"""A Stylus-faithful baseline (Luo et al., arXiv 2404.18928), as far as it can be without its LLM and VLM.

Stylus retrieves the top 150 adapters by cosine between the whole prompt and each adapter's description,
then its composer splits the prompt into tasks (keywords) and assigns up to 3 of those adapters to each
task; per image, its masking keeps, for every task independently, all of the task's adapters, one random
one, or none, and the kept adapters of a task share a total scale of 0.8. Here the tasks come from manta's
keyword decomposer (in place of Stylus's LLM), and an adapter is assigned to the task it is most similar to
when that cosine clears the relevance threshold. The checkpoint is the one most similar to the prompt.

`enforce_limits=False` is Stylus as published (no hardware limits); `True` applies the same limits manta
works under: the most similar checkpoint that fits, then the least relevant adapters dropped until the
plan fits the VRAM, latency, price and adapter-count limits.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from manta.composer import Composer
from manta.concepts import check_prompt
from manta.evaluation.controls import fitting_checkpoints
from manta.limits import ResolvedLimits, plan_cost
from manta.plan import CompositionPlan, plan_from_entries

TOP_K = 150
ADAPTERS_PER_TASK = 3
TASK_SCALE = 0.8


@dataclass
class StylusBaseline:
    """Top-150 retrieval, up to 3 adapters per task, Stylus masking; optionally under hardware limits."""

    composer: Composer
    enforce_limits: bool = False
    masking: bool = True
    top_k: int = TOP_K
    threshold: float | None = None

    @property
    def name(self) -> str:
        return "stylus-limited" if self.enforce_limits else "stylus"

    def compose(self, prompt: str, limits: ResolvedLimits, batch: int = 1, seed: int = 0) -> list[CompositionPlan]:
        prompt = check_prompt(prompt)
        composer, index = self.composer, self.composer.index
        tasks = composer.decomposer.decompose(prompt)
        vectors = composer.embedder.embed([prompt, *(t.text for t in tasks)])
        prompt_D, tasks_TD = vectors[0], vectors[1:]
        checkpoints = (
            fitting_checkpoints(composer, limits) if self.enforce_limits else list(composer.catalog.checkpoints)
        )
        base_scores = [float(index.vector(e.id) @ prompt_D) for e in checkpoints]
        base = checkpoints[int(np.argmax(base_scores))]
        hits = index.search_adapters(prompt_D[None, :], self.top_k, base.base_family)
        positions = hits.positions_QK[0]
        threshold = composer.settings.min_relevance if self.threshold is None else self.threshold
        per_task: list[list[tuple[int, float]]] = [[] for _ in tasks]
        if len(positions):
            sims_NT = index.embeddings_ND[positions] @ tasks_TD.T
            for row, position in enumerate(positions):
                t = int(np.argmax(sims_NT[row]))
                if sims_NT[row, t] >= threshold:
                    per_task[t].append((int(position), float(sims_NT[row, t])))
        assigned = [sorted(group, key=lambda p: -p[1])[:ADAPTERS_PER_TASK] for group in per_task]
        rng = np.random.default_rng(seed)
        names = tuple(t.text for t in tasks)
        plans = []
        for _ in range(batch):
            adapters = []
            for t, group in enumerate(assigned):
                kept = self._mask(group, rng)
                for position, relevance in kept:
                    entry = index.entry(position)
                    adapters.append((entry, names[t], TASK_SCALE / len(kept), relevance))
            if self.enforce_limits:
                adapters = self._fit(base, adapters, limits)
            plans.append(plan_from_entries(prompt, base, adapters, names, limits))
        return plans

    def _mask(self, group: list[tuple[int, float]], rng: np.random.Generator) -> list[tuple[int, float]]:
        """Stylus masking for one task: all its adapters, one random one, or none, with equal chance."""
        if not self.masking or not group:
            return group
        choice = int(rng.integers(3))
        if choice == 0:
            return group
        if choice == 1:
            return [group[int(rng.integers(len(group)))]]
        return []

    @staticmethod
    def _fit(base, adapters: list, limits: ResolvedLimits) -> list:
        """Drop the least relevant adapters until the plan fits every limit."""
        kept = sorted(adapters, key=lambda a: -a[3])
        while kept and plan_cost(base, [a[0] for a in kept], limits).violations(limits):
            kept.pop()
        return kept
