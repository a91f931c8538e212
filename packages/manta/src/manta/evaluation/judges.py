"""Judges that compare two batches of images (or plans) for one prompt, scoring each side 0-2 per criterion.

As in Stylus's VLM evaluation, three criteria are judged: diversity, alignment and quality; a side scores
2 when it is clearly better, 0 when clearly worse, 1 each when they are even. `OfflineJudge` does this on
plan metrics, costs nothing and needs no model; `VLMJudge` asks a vision-language model about rendered
images through any `(images, question) -> answer` callable.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from manta.errors import MantaError
from manta.evaluation.metrics import PlanEvaluator
from manta.plan import CompositionPlan

CRITERIA = ("diversity", "alignment", "quality")


@dataclass(frozen=True)
class Verdict:
    """Scores 0-2 per criterion for side A and side B, and whatever the judge measured."""

    a: dict[str, int]
    b: dict[str, int]
    details: dict[str, Any] = field(default_factory=dict)


class Judge(Protocol):
    def judge(
        self,
        prompt: str,
        batch_a: list[CompositionPlan],
        batch_b: list[CompositionPlan],
        seed_a: int = 0,
        seed_b: int | None = None,
    ) -> Verdict:
        """Score both batches; a judge that renders draws A's images with seeds seed_a, seed_a + 1, ... and B's
        with seed_b, seed_b + 1, ... (None: A's seeds)."""
        ...


def compare(value_a: float, value_b: float, margin: float) -> tuple[int, int]:
    """(2, 0) if A is better by more than margin, (0, 2) if B is, else (1, 1)."""
    if value_a > value_b + margin:
        return 2, 0
    if value_b > value_a + margin:
        return 0, 2
    return 1, 1


def verdict_of(values_a: Mapping[str, float], values_b: Mapping[str, float], margins: Mapping[str, float],
               details: dict[str, Any]) -> Verdict:  # fmt: skip
    """Each criterion's two values compared within its margin (`compare`): the one home of that rule."""
    a, b = {}, {}
    for name in CRITERIA:
        a[name], b[name] = compare(values_a[name], values_b[name], margins[name])
    return Verdict(a, b, details)


@dataclass
class OfflineJudge:
    """Judges batches on plan metrics (alignment = concept coverage, diversity, expected quality)."""

    evaluator: PlanEvaluator
    margin: float = 0.02

    def judge(
        self,
        prompt: str,
        batch_a: list[CompositionPlan],
        batch_b: list[CompositionPlan],
        seed_a: int = 0,
        seed_b: int | None = None,
    ) -> Verdict:
        """Plan metrics render nothing: the seeds change nothing here."""
        metrics_a, metrics_b = self.evaluator.batch(batch_a), self.evaluator.batch(batch_b)
        values = [{name: getattr(m, name) for name in CRITERIA} for m in (metrics_a, metrics_b)]
        return verdict_of(*values, dict.fromkeys(CRITERIA, self.margin), {"a": metrics_a, "b": metrics_b})


QUESTIONS = {
    "diversity": "How different are the images within each set from one another (composition, subjects, style)?",
    "alignment": "How well do the images of each set match the prompt: {prompt!r}?",
    "quality": "How good is the visual quality of each set (fidelity, detail, absence of artefacts)?",
}
ANSWER_FORMAT = (
    "The first {n_a} images are set A, the next {n_b} are set B. Score each set from 0 (worst) to 2 "
    "(best) and answer exactly as `A: <score>, B: <score>`."
)
_ANSWER = re.compile(r"A\s*[:=]\s*([0-2])\D+B\s*[:=]\s*([0-2])", re.IGNORECASE)


def parse_scores(answer: str) -> tuple[int, int]:
    """Read `A: x, B: y` from a VLM answer."""
    match = _ANSWER.search(answer)
    if not match:
        raise MantaError(f"the VLM judge's answer has no 'A: <0-2>, B: <0-2>' scores: {answer[:200]!r}")
    return int(match.group(1)), int(match.group(2))


@dataclass
class VLMJudge:
    """Asks a vision-language model to score rendered image sets on diversity, alignment and quality."""

    ask: Callable[[Sequence[Any], str], str]  # (images, question) -> answer text
    render: Callable[[CompositionPlan, int], Any]  # (plan, seed) -> image
    questions: dict[str, str] = field(default_factory=lambda: dict(QUESTIONS))

    def judge(
        self,
        prompt: str,
        batch_a: list[CompositionPlan],
        batch_b: list[CompositionPlan],
        seed_a: int = 0,
        seed_b: int | None = None,
    ) -> Verdict:
        seed_b = seed_a if seed_b is None else seed_b
        images = [self.render(plan, seed_a + i) for i, plan in enumerate(batch_a)]
        images += [self.render(plan, seed_b + i) for i, plan in enumerate(batch_b)]
        a, b, answers = {}, {}, {}
        for name in CRITERIA:
            question = (
                self.questions[name].format(prompt=prompt)
                + " "
                + ANSWER_FORMAT.format(n_a=len(batch_a), n_b=len(batch_b))
            )
            answers[name] = self.ask(images, question)
            a[name], b[name] = parse_scores(answers[name])
        return Verdict(a, b, {"answers": answers})
