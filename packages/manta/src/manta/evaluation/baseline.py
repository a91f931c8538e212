"""A Stylus-like baseline: top-k adapters by cosine to the whole prompt, all of them, no limits.

It follows the retrieval half of Stylus (arXiv 2404.18928) without its LLM composer: the checkpoint most
similar to the prompt, the k adapters of its family most similar to the whole prompt, each at a fixed
scale; optionally Stylus-style masking, where each image drops each adapter with probability 1/2.
Hardware and price are ignored on purpose: that is what manta is compared against.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from manta.concepts import check_prompt
from manta.embedding import TextEmbedder
from manta.index import CatalogIndex
from manta.limits import ResolvedLimits, plan_cost
from manta.plan import AdapterChoice, CompositionPlan


@dataclass
class StylusLikeBaseline:
    """Top-k cosine retrieval over the whole prompt; every adapter used, no limits."""

    index: CatalogIndex
    embedder: TextEmbedder
    top_k: int = 5
    scale: float = 0.8
    masking: bool = False
    name: str = "stylus-like"

    def compose(self, prompt: str, limits: ResolvedLimits, batch: int = 1, seed: int = 0) -> list[CompositionPlan]:
        """`batch` plans; identical unless `masking` (costs are reported against `limits`, never enforced)."""
        prompt = check_prompt(prompt)
        prompt_D = self.embedder.embed([prompt])[0]
        base_scores = self.index.checkpoint_scores(prompt_D[None, :])[0]
        base = self.index.entry(self.index.checkpoint_positions[int(np.argmax(base_scores))])
        hits = self.index.search_adapters(prompt_D[None, :], self.top_k, base.base_family)
        adapters = [
            (self.index.entry(p), float(s)) for p, s in zip(hits.positions_QK[0], hits.scores_QK[0], strict=True)
        ]
        rng = np.random.default_rng(seed)
        plans = []
        for _ in range(batch):
            kept = [a for a in adapters if not self.masking or rng.random() >= 0.5]
            entries = [e for e, _ in kept]
            cost = plan_cost(base, entries, limits)
            triggers = [w for e in entries for w in e.trigger_words]
            plans.append(
                CompositionPlan(
                    prompt=prompt,
                    prompt_text=", ".join([prompt, *triggers]),
                    base_id=base.id,
                    base_family=base.base_family,
                    adapters=tuple(
                        AdapterChoice(
                            e.id, prompt, round(min(e.weight_max, max(e.weight_min, self.scale)), 3), round(s, 4)
                        )
                        for e, s in kept
                    ),
                    concepts=(prompt,),
                    hardware=limits.name,
                    vram_bytes=cost.vram_bytes,
                    latency_s=cost.latency_s,
                    price=cost.price,
                    relevance=round(sum(s for _, s in kept), 4),
                )
            )
        return plans
