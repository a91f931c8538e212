"""A judge on rendered images: both batches are rendered with the same seeds and scored by an `ImageScorer`.

Per batch: alignment is the mean of the scorer's per-image alignment with the prompt, diversity the mean
pairwise cosine distance of the scorer's image embeddings, quality the mean of its quality score. Each
criterion is compared with a margin (ties within it), scoring 2 / 0 or 1 / 1 like the other judges.
`calibrate` widens the alignment and quality margins to the scorer's own noise: the same plan rendered with
other seeds scatters (the tiny world's quality head by 0.33 per image, `benchmarks/lora_quality.py`), and a
difference of two batch means within one standard deviation of that scatter, sigma x sqrt(2 / batch), is a
tie, not a win.
Renders are cached by plan and seed, so manta's images are made once however many opponents it meets; with
`render_many` (a backend's batch renderer) the images still missing are rendered in one call, the batches of
several comparisons at once through `prefetch`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from itertools import combinations
from typing import Any

import numpy as np

from manta.evaluation.image_scorers import ImageScorer
from manta.evaluation.judges import CRITERIA, Verdict, compare
from manta.plan import CompositionPlan

MARGINS = {"diversity": 0.02, "alignment": 0.03, "quality": 0.03}
NOISE_SEED = 1000  # seeds of the calibration renders start here, apart from a batch's seeds 0, 1, ...
CALIBRATED = ("alignment", "quality")  # per-image scores, whose seed noise a batch mean averages


def render_key(plan: CompositionPlan, seed: int) -> tuple:
    """What decides a render: base, adapters with weights, prompt text and seed."""
    return (plan.base_id, tuple((a.id, a.weight) for a in plan.adapters), plan.prompt_text, seed)


def seeded(plans: list[CompositionPlan]) -> list[tuple[CompositionPlan, int]]:
    """(plan, seed) of each image of a batch: image i is rendered with seed i, the same for every system."""
    return [(plan, seed) for seed, plan in enumerate(plans)]


def noise_renders(cases: list[tuple[str, CompositionPlan]], seeds: int) -> list[tuple[CompositionPlan, int]]:
    """(plan, seed) of each calibration image: every case's plan with seeds NOISE_SEED, NOISE_SEED + 1, ..."""
    return [(plan, NOISE_SEED + s) for _, plan in cases for s in range(seeds)]


def embedding_diversity(vectors_ND: np.ndarray) -> float:
    """Mean pairwise cosine distance of unit image embeddings (0 for one image)."""
    pairs = list(combinations(range(len(vectors_ND)), 2))
    return float(np.mean([1.0 - vectors_ND[i] @ vectors_ND[j] for i, j in pairs])) if pairs else 0.0


@dataclass
class ImageJudge:
    """Renders plans (`render(plan, seed) -> PIL image`, or where the renderer has it `render_many([(plan, seed),
    ...]) -> images`, the same images up to float rounding) and judges the images with `scorer`."""

    scorer: ImageScorer
    render: Callable[[CompositionPlan, int], Any]
    render_many: Callable[[Sequence[tuple[CompositionPlan, int]]], list[Any]] | None = None
    margins: dict[str, float] = field(default_factory=lambda: dict(MARGINS))
    seed_noise: dict[str, float] = field(default_factory=dict)  # per-image std from the seed alone (calibrate)
    _images: dict[tuple, Any] = field(default_factory=dict, repr=False)

    @property
    def name(self) -> str:
        return f"images/{self.scorer.name}"

    def images(self, plans: list[CompositionPlan]) -> list[Any]:
        """The batch's images (`seeded`)."""
        return self._rendered(seeded(plans))

    def prefetch(
        self, batches: Sequence[list[CompositionPlan]], cases: list[tuple[str, CompositionPlan]] = (), seeds: int = 0
    ) -> None:
        """Render in one go the images not rendered yet that `images` would render for each batch and
        `calibrate(cases, seeds)` for the cases."""
        self._rendered([request for plans in batches for request in seeded(plans)] + noise_renders(cases, seeds))

    def _rendered(self, requests: list[tuple[CompositionPlan, int]]) -> list[Any]:
        """The render of each (plan, seed), made once; the missing ones in one `render_many` call if given."""
        keys = [render_key(plan, seed) for plan, seed in requests]
        missing = {key: request for key, request in zip(keys, requests, strict=True) if key not in self._images}
        if self.render_many is not None:
            self._images.update(zip(missing, self.render_many(list(missing.values())), strict=True))
        else:
            self._images.update((key, self.render(plan, seed)) for key, (plan, seed) in missing.items())
        return [self._images[key] for key in keys]

    def calibrate(self, cases: list[tuple[str, CompositionPlan]], seeds: int, batch: int) -> dict[str, float]:
        """Render each (prompt, plan) with `seeds` seeds, pool the per-image standard deviation of alignment and
        quality over the cases, and widen those margins to sigma x sqrt(2 / batch); returns the margins."""
        if seeds < 2 or not cases:
            raise ValueError(f"calibration needs 2 or more seeds and a case, got {seeds} seeds, {len(cases)} cases")
        variances: dict[str, list[float]] = {c: [] for c in CALIBRATED}
        self._rendered(noise_renders(cases, seeds))  # in one go
        for prompt, plan in cases:
            images = self._rendered(noise_renders([(prompt, plan)], seeds))
            variances["alignment"].append(float(np.var(self.scorer.alignment(images, prompt), ddof=1)))
            variances["quality"].append(float(np.var(self.scorer.quality(images), ddof=1)))
        self.seed_noise = {c: float(np.sqrt(np.mean(v))) for c, v in variances.items()}
        for c in CALIBRATED:
            self.margins[c] = max(MARGINS[c], self.seed_noise[c] * float(np.sqrt(2.0 / batch)))
        return dict(self.margins)

    def measure(self, prompt: str, plans: list[CompositionPlan]) -> dict[str, float]:
        """Alignment, diversity and quality of one batch's images."""
        images = self.images(plans)
        return {
            "alignment": float(np.mean(self.scorer.alignment(images, prompt))),
            "diversity": embedding_diversity(self.scorer.embed(images)),
            "quality": float(np.mean(self.scorer.quality(images))),
        }

    def judge(self, prompt: str, batch_a: list[CompositionPlan], batch_b: list[CompositionPlan]) -> Verdict:
        metrics_a, metrics_b = self.measure(prompt, batch_a), self.measure(prompt, batch_b)
        a, b = {}, {}
        for name in CRITERIA:
            a[name], b[name] = compare(metrics_a[name], metrics_b[name], self.margins[name])
        return Verdict(a, b, {"a": metrics_a, "b": metrics_b})
