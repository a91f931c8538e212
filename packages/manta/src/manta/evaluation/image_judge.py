"""A judge on rendered images: both batches are rendered with the same seeds and scored by an `ImageScorer`.

Per batch: alignment is the mean of the scorer's per-image alignment with the prompt, diversity the mean
pairwise cosine distance of the scorer's image embeddings, quality the mean of its quality score. Each
criterion is compared with a margin (ties within it), scoring 2 / 0 or 1 / 1 like the other judges.
`calibrate` sets every margin from the scorer's own noise: the same batch of plans rendered with other seeds
scatters (the tiny world's quality head by 0.33 per image, `benchmarks/lora_quality.py`), and a difference of
two batch values within one standard deviation of that scatter (sigma_batch x sqrt(2)) is a tie, not a win.
Renders are cached by plan and seed, so manta's images are made once however many opponents it meets; with
`render_many` (a backend's batch renderer) the images still missing are rendered in one call, the batches of
several comparisons at once through `prefetch`; with a `store` (`RenderStore`) they are kept on disk too.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from itertools import combinations
from typing import Any

import numpy as np

from manta.evaluation.image_scorers import ImageScorer
from manta.evaluation.judges import CRITERIA, Verdict, verdict_of
from manta.plan import CompositionPlan

MARGINS = {"diversity": 0.02, "alignment": 0.03, "quality": 0.03}  # before `calibrate` only
NOISE_SEED = 2_000_000  # seeds of the calibration renders start here, apart from the comparisons' seeds
TIE_SDS = 1.0  # a tie: a difference within this many standard deviations of two batch values' seed noise


def render_key(plan: CompositionPlan, seed: int) -> tuple:
    """What decides a render: base, adapters with weights, prompt text and seed."""
    return (plan.base_id, tuple((a.id, a.weight) for a in plan.adapters), plan.prompt_text, seed)


def seeded(plans: list[CompositionPlan], start: int = 0) -> list[tuple[CompositionPlan, int]]:
    """(plan, seed) of each image of a batch: image i is rendered with seed start + i, the same for every system."""
    return [(plan, start + i) for i, plan in enumerate(plans)]


def noise_starts(case: int, plans: list[CompositionPlan], seed_sets: int) -> list[int]:
    """The first seed of each calibration render of case `case`'s batch: its own seeds from NOISE_SEED on."""
    return [NOISE_SEED + (case * seed_sets + s) * len(plans) for s in range(seed_sets)]


def noise_renders(
    cases: Sequence[tuple[str, list[CompositionPlan]]], seed_sets: int
) -> list[tuple[CompositionPlan, int]]:
    """(plan, seed) of every calibration image: each case's batch rendered with `seed_sets` sets of other seeds."""
    return [
        r
        for k, (_, plans) in enumerate(cases)
        for start in noise_starts(k, plans, seed_sets)
        for r in seeded(plans, start)
    ]


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
    seed_noise: dict[str, float] = field(default_factory=dict)  # a batch value's std from the seeds alone
    store: Any = None  # a `RenderStore`: renders kept on disk by content, reused by later runs
    _images: dict[tuple, Any] = field(default_factory=dict, repr=False)

    @property
    def name(self) -> str:
        return f"images/{self.scorer.name}"

    def images(self, plans: list[CompositionPlan], start: int = 0) -> list[Any]:
        """The batch's images (`seeded`)."""
        return self._rendered(seeded(plans, start))

    def prefetch(self, requests: Sequence[tuple[CompositionPlan, int]]) -> None:
        """Render in one go the (plan, seed) images not rendered yet (a comparison's `seeded` batches,
        `noise_renders` for `calibrate`)."""
        self._rendered(list(requests))

    def _rendered(self, requests: list[tuple[CompositionPlan, int]]) -> list[Any]:
        """The render of each (plan, seed), made once; the missing ones in one `render_many` call if given."""
        keys = [render_key(plan, seed) for plan, seed in requests]
        missing = {key: request for key, request in zip(keys, requests, strict=True) if key not in self._images}
        if missing and self.store is not None:
            found = self.store.get(list(missing))
            self._images.update(found)
            missing = {key: request for key, request in missing.items() if key not in found}
        if missing:
            if self.render_many is not None:
                made = dict(zip(missing, self.render_many(list(missing.values())), strict=True))
            else:
                made = {key: self.render(plan, seed) for key, (plan, seed) in missing.items()}
            self._images.update(made)
            if self.store is not None:
                self.store.put(made)
        return [self._images[key] for key in keys]

    def calibrate(self, cases: Sequence[tuple[str, list[CompositionPlan]]], seed_sets: int) -> dict[str, float]:
        """Render each (prompt, batch of plans) with `seed_sets` sets of other seeds, pool the variance of each
        criterion's batch value over the cases, and set every margin to TIE_SDS x sigma_batch x sqrt(2) (one
        standard deviation of a difference of two batches' values); returns the margins."""
        if seed_sets < 2 or not cases or min(len(plans) for _, plans in cases) < 2:
            raise ValueError(
                f"calibration needs 2 or more seed sets and cases of 2 or more images, got {seed_sets} seed sets, "
                f"{len(cases)} cases"
            )
        self._rendered(noise_renders(cases, seed_sets))  # in one go
        variances: dict[str, list[float]] = {c: [] for c in CRITERIA}
        for k, (prompt, plans) in enumerate(cases):
            values = [self.measure(prompt, plans, start) for start in noise_starts(k, plans, seed_sets)]
            for c in CRITERIA:
                variances[c].append(float(np.var([v[c] for v in values], ddof=1)))
        self.seed_noise = {c: float(np.sqrt(np.mean(v))) for c, v in variances.items()}
        self.margins = {c: TIE_SDS * self.seed_noise[c] * float(np.sqrt(2.0)) for c in CRITERIA}
        return dict(self.margins)

    def measure(self, prompt: str, plans: list[CompositionPlan], start: int = 0) -> dict[str, float]:
        """Alignment, diversity and quality of one batch's images (rendered with seeds start, start + 1, ...)."""
        images = self.images(plans, start)
        return {
            "alignment": float(np.mean(self.scorer.alignment(images, prompt))),
            "diversity": embedding_diversity(self.scorer.embed(images)),
            "quality": float(np.mean(self.scorer.quality(images))),
        }

    def judge(
        self,
        prompt: str,
        batch_a: list[CompositionPlan],
        batch_b: list[CompositionPlan],
        seed_a: int = 0,
        seed_b: int | None = None,
    ) -> Verdict:
        """A's batch rendered with seeds seed_a, seed_a + 1, ...; B's from seed_b on (None: A's seeds)."""
        seed_b = seed_a if seed_b is None else seed_b
        metrics_a, metrics_b = self.measure(prompt, batch_a, seed_a), self.measure(prompt, batch_b, seed_b)
        return verdict_of(metrics_a, metrics_b, self.margins, {"a": metrics_a, "b": metrics_b})


@dataclass
class RenderStore:
    """Rendered images kept on disk, by what decides them: `namespace` (a hash of the models' files, the render
    settings and the library versions: anything else that changes a render) and each `render_key`. One `.npz`
    per `put`, written atomically; images come back as the same RGB pixels."""

    folder: Any
    namespace: str
    _index: dict[str, Any] | None = field(default=None, repr=False)

    def _name(self, key: tuple) -> str:
        import hashlib

        return hashlib.sha256(repr((self.namespace, key)).encode()).hexdigest()[:24]

    def _load(self) -> dict[str, Any]:
        from pathlib import Path

        if self._index is None:
            self._index = {}
            folder = Path(self.folder) / self.namespace
            for path in sorted(folder.glob("*.npz")) if folder.is_dir() else []:
                with np.load(path) as data:
                    self._index.update({name: data[name] for name in data.files})
        return self._index

    def get(self, keys: Sequence[tuple]) -> dict[tuple, Any]:
        from PIL import Image

        index = self._load()
        names = {key: self._name(key) for key in keys}
        return {key: Image.fromarray(index[name]) for key, name in names.items() if name in index}

    def put(self, images: dict[tuple, Any]) -> None:
        import hashlib
        import io
        from pathlib import Path

        from zaya_config.atomic import write_bytes_atomic

        if not images:
            return
        arrays = {self._name(key): np.asarray(image.convert("RGB"), dtype=np.uint8) for key, image in images.items()}
        buffer = io.BytesIO()
        np.savez_compressed(buffer, **arrays)
        chunk = hashlib.sha256("".join(sorted(arrays)).encode()).hexdigest()[:16]
        write_bytes_atomic(Path(self.folder) / self.namespace / f"{chunk}.npz", buffer.getvalue(), durable=False)
        self._load().update(arrays)
