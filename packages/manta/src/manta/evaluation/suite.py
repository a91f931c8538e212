"""One evaluation of manta's composer: opponents, controls, an A/A run, one judge, and the numbers a claim needs.

`evaluate` pits the composer (side A) against every opponent and every control on the same prompts with
the same judge, and against itself composed and rendered with other seeds (the A/A run, `aa`: it must come
out even, 0.5 inside its interval, or the judge or the pipeline favours a side). Per system and criterion
(`manta.evaluation.stats`): wins, ties and losses, the rate (wins + ties / 2) / prompts, its paired bootstrap
95% interval over prompts, the sign test, and the measured difference with its interval. An image judge's
tie margins come from its own seed noise (`ImageJudge.calibrate` on manta's first batches). It also measures
how much of each prompt the composer serves: concept coverage (share of a prompt's concepts that some
adapter of the plan serves, averaged over plans) and adapters per image. `Evaluation.to_dict()` is
`winrates.json`; the judge's name (and, where known, its accuracy) is written with every number.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from manta.composer import Composer
from manta.evaluation.judges import CRITERIA, Judge
from manta.evaluation.stats import Comparison
from manta.evaluation.winrate import Pairs, PlanSystem, WinRateReport, judge_pairs
from manta.limits import ResolvedLimits
from manta.plan import CompositionPlan

SMOKE_JUDGE = "plan-metrics (smoke check: scores the plan metrics the composer optimises, no images)"
CONTROL_LIMIT = 0.30  # a control that wins this share of alignment or quality comparisons discredits the judge
CALIBRATION_PROMPTS, CALIBRATION_SEEDS = 8, 4  # an image judge's seed noise: manta's first 8 batches x 4 seed sets
AA_NAME = "manta (other seeds)"
AA_COMPOSE_SEED = 10_000  # the A/A run's side B: manta composed with seed + AA_COMPOSE_SEED + i for prompt i ...
AA_RENDER_SEED = 1_000_000  # ... and its images rendered with seeds of their own (`render_seeds`)


def render_seeds(n_prompts: int, batch: int, aa: bool = False) -> list[tuple[int, int]]:
    """(A's first seed, B's first seed) of each prompt's images: prompt i's from i x batch on, the same for both
    systems (what the seed does to an image cancels in the comparison) and new for every prompt (what it does
    averages over prompts, and the interval over prompts holds it); an A/A run's side B from AA_RENDER_SEED on.
    (One set of seeds for every prompt made each comparison depend on those few noise draws: with seeds 0 and 1
    for side A and 500 and 501 for side B, manta lost alignment to itself, 0.37 [0.32, 0.42] over 200 prompts.)"""
    return [(i * batch, (AA_RENDER_SEED if aa else 0) + i * batch) for i in range(n_prompts)]


@dataclass
class Evaluation:
    judge: str
    hardware: str
    prompts: list[str]
    batch: int
    opponents: dict[str, WinRateReport] = field(default_factory=dict)
    controls: dict[str, WinRateReport] = field(default_factory=dict)
    aa: WinRateReport | None = None  # manta against itself with other seeds
    coverage: float = 0.0
    adapters_per_image: float = 0.0
    prompt_source: str = ""
    margins: dict[str, float] = field(default_factory=dict)  # a comparison within its criterion's margin is a tie
    seed_noise: dict[str, float] = field(default_factory=dict)  # an image judge's batch-value noise from the seed
    judge_accuracy: dict[str, Any] | None = None  # the judge on labelled images, where known
    world_seeds: dict[str, int] | None = None  # the seeds the world, its judge and this evaluation were made with

    def comparisons(self, group: str) -> dict[str, dict[str, Comparison]]:
        """{system: {criterion: Comparison}} of `opponents` or `controls`."""
        return {name: report.comparisons() for name, report in getattr(self, group).items()}

    def beaten(self, group: str) -> dict[str, list[str]]:
        """Per system of `group`, the criteria on which manta beats it (the rate's interval above 0.5)."""
        return {n: [c for c, k in per.items() if k.beats] for n, per in self.comparisons(group).items()}

    def control_win_rate(self, name: str, criterion: str) -> float:
        """How often control `name` beat manta on `criterion` (its losses column, over prompts)."""
        tally = self.controls[name].tallies[criterion]
        return tally.losses / tally.total if tally.total else 0.0

    def control_violations(self) -> list[str]:
        """Every (control, criterion) where a control won CONTROL_LIMIT or more of alignment or quality, or beat
        manta on any criterion beyond its interval."""
        found = [
            f"{name} wins {self.control_win_rate(name, c):.0%} of {c} comparisons (limit {CONTROL_LIMIT:.0%})"
            for name in self.controls
            for c in ("alignment", "quality")
            if self.control_win_rate(name, c) >= CONTROL_LIMIT
        ]
        for name, per in self.comparisons("controls").items():
            found += [
                f"{name} beats manta on {c} (rate {k.rate:.2f}, ci {k.ci[1]:.2f} < 0.5)"
                for c, k in per.items()
                if k.loses
            ]
        return found

    def to_dict(self) -> dict[str, Any]:
        def stats(group: str) -> dict[str, dict[str, dict[str, Any]]]:
            return {n: {c: k.to_dict() for c, k in per.items()} for n, per in self.comparisons(group).items()}

        reports = {**self.opponents, **self.controls, **({AA_NAME: self.aa} if self.aa else {})}
        return {
            "judge": self.judge,
            "judge_accuracy": self.judge_accuracy,
            "world_seeds": self.world_seeds,
            "rates": "manta's (wins + ties / 2) / prompts against each system; ci: paired bootstrap 95% over prompts; "
            "sign_p: exact sign test of wins against losses; diff: mean measured value, manta's minus the system's",
            "hardware": self.hardware,
            "prompts": len(self.prompts),
            "prompt_source": self.prompt_source,
            "batch": self.batch,
            "margins": {c: round(m, 4) for c, m in self.margins.items()},
            "seed_noise": {c: round(v, 4) for c, v in self.seed_noise.items()},
            "aa": {c: k.to_dict() for c, k in self.aa.comparisons().items()} if self.aa else None,
            "opponents": stats("opponents"),
            "controls": stats("controls"),
            "beats": {**self.beaten("opponents"), **self.beaten("controls")},
            "control_violations": self.control_violations(),
            "control_win_rates": {
                n: {c: round(self.control_win_rate(n, c), 4) for c in CRITERIA} for n in self.controls
            },
            "coverage": round(self.coverage, 4),
            "adapters_per_image": round(self.adapters_per_image, 4),
            "rows": {name: report.rows for name, report in reports.items()},
        }


def coverage_of(composer: Composer, prompts: Sequence[str], limits: ResolvedLimits, batch: int, seed: int = 0):
    """(mean concept coverage, mean adapters per image) of the composer's plans for `prompts`."""
    return batch_coverage([composer.compose(p, limits, batch=batch, seed=seed + i) for i, p in enumerate(prompts)])


def batch_coverage(batches: Sequence[list[CompositionPlan]]) -> tuple[float, float]:
    """(mean concept coverage, mean adapters per image) of the composer's batches."""
    covered, adapters = [], []
    for plans in batches:
        for plan in plans:
            served = {a.concept for a in plan.adapters}
            covered.append(len(served & set(plan.concepts)) / max(len(plan.concepts), 1))
            adapters.append(len(plan.adapters))
    return float(np.mean(covered)) if covered else 0.0, float(np.mean(adapters)) if adapters else 0.0


@dataclass
class Prepared:
    """Everything an evaluation composes before it judges: per system, (prompt, manta's batch, its batch)."""

    pairs: dict[str, Pairs]
    groups: dict[str, list[str]]  # "opponents" / "controls" / "aa" -> system names
    cases: list[tuple[str, list[CompositionPlan]]]  # the batches the judge's seed noise is measured on
    mine: list[list[CompositionPlan]]
    batch: int

    def requests(self) -> list[tuple[CompositionPlan, int]]:
        """Every (plan, seed) an image judge renders: each comparison's two batches and the calibration."""
        from manta.evaluation.image_judge import noise_renders, seeded

        out = []
        for name, rows in self.pairs.items():
            seeds = render_seeds(len(rows), self.batch, name == AA_NAME)
            for (_, plans_a, plans_b), (seed_a, seed_b) in zip(rows, seeds, strict=True):
                out += seeded(plans_a, seed_a) + seeded(plans_b, seed_b)
        return out + noise_renders(self.cases, CALIBRATION_SEEDS)


def prepare(
    prompts: Sequence[str],
    composer: Composer,
    limits: ResolvedLimits,
    opponents: dict[str, PlanSystem],
    controls: dict[str, PlanSystem],
    batch: int = 4,
    seed: int = 0,
    aa: bool = True,
    calibrate: bool = True,
) -> Prepared:
    """Compose every batch: manta's once (prompt i with seed + i), every other system's with the same seeds, the
    A/A side with seed + AA_COMPOSE_SEED + i."""
    with getattr(composer.embedder, "remembering", nullcontext)():  # each prompt embedded once, not per system
        prompts = list(prompts)
        mine = [composer.compose(p, limits, batch=batch, seed=seed + i) for i, p in enumerate(prompts)]
        systems = {**opponents, **controls, **({AA_NAME: composer} if aa else {})}
        pairs: dict[str, Pairs] = {}
        for name, system in systems.items():
            offset = AA_COMPOSE_SEED if name == AA_NAME else 0
            theirs = [system.compose(p, limits, batch=batch, seed=seed + offset + i) for i, p in enumerate(prompts)]
            pairs[name] = list(zip(prompts, mine, theirs, strict=True))
    groups = {"opponents": list(opponents), "controls": list(controls), "aa": [AA_NAME] if aa else []}
    cases = list(zip(prompts, mine, strict=True))[:CALIBRATION_PROMPTS] if calibrate and batch >= 2 else []
    return Prepared(pairs, groups, cases, mine, batch)


def evaluate(
    prompts: Sequence[str],
    composer: Composer,
    judge: Judge,
    judge_name: str,
    limits: ResolvedLimits,
    opponents: dict[str, PlanSystem],
    controls: dict[str, PlanSystem],
    batch: int = 4,
    seed: int = 0,
    progress: bool = False,
    prompt_source: str = "",
    aa: bool = True,
    judge_accuracy: dict[str, Any] | None = None,
    world_seeds: dict[str, int] | None = None,
    prepared: Prepared | None = None,
) -> Evaluation:
    """Win rates of the composer against each opponent and control (and itself, `aa`), and its coverage."""
    calibrating = hasattr(judge, "calibrate")  # a judge of rendered images: ties set by its own seed noise
    if prepared is None:
        prepared = prepare(prompts, composer, limits, opponents, controls, batch, seed, aa, calibrating)
    result = Evaluation(
        judge_name,
        limits.name,
        list(prompts),
        batch,
        prompt_source=prompt_source,
        judge_accuracy=judge_accuracy,
        world_seeds=world_seeds,
    )
    renders = hasattr(judge, "prefetch")
    if renders:  # every image at once: a batched backend renders one plan set-up's together
        judge.prefetch(prepared.requests())
    if calibrating and prepared.cases:
        judge.calibrate(prepared.cases, CALIBRATION_SEEDS)
        result.seed_noise = dict(judge.seed_noise)
    if hasattr(judge, "margins"):
        result.margins = dict(judge.margins)
    elif hasattr(judge, "margin"):
        result.margins = {c: judge.margin for c in CRITERIA}
    for group, names in prepared.groups.items():
        for name in names:
            seeds = render_seeds(len(prepared.pairs[name]), prepared.batch, group == "aa")
            report = judge_pairs(prepared.pairs[name], judge, ("manta", name), progress, seeds)
            if group == "aa":
                result.aa = report
            else:
                getattr(result, group)[name] = report
    result.coverage, result.adapters_per_image = batch_coverage(prepared.mine)
    return result


def plot_evaluation(result: Evaluation, path: str | Path) -> None:
    """One panel per criterion: manta's rate against every opponent, control and itself (A/A), with its 95%
    interval, and the wins / ties / losses."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from zaya_config.atomic import write_atomic

    reports = {
        **({f"{AA_NAME} (A/A)": result.aa} if result.aa else {}),
        **result.opponents,
        **{f"{n} (control)": r for n, r in result.controls.items()},
    }
    names = list(reports)
    stats = {n: r.comparisons() for n, r in reports.items()}
    fig, axes = plt.subplots(1, len(CRITERIA), figsize=(4.2 * len(CRITERIA), 0.55 * len(names) + 1.6), sharey=True)
    y = np.arange(len(names))
    for ax, criterion in zip(axes, CRITERIA, strict=True):
        rates = np.array([stats[n][criterion].rate for n in names])
        lo = np.array([stats[n][criterion].ci[0] for n in names])
        hi = np.array([stats[n][criterion].ci[1] for n in names])
        colours = [
            "tab:green" if stats[n][criterion].beats else "tab:red" if stats[n][criterion].loses else "tab:gray"
            for n in names
        ]
        ax.errorbar(rates, y, xerr=[rates - lo, hi - rates], fmt="none", ecolor="black", capsize=3, lw=1)
        ax.scatter(rates, y, c=colours, zorder=3)
        for i, n in enumerate(names):
            k = stats[n][criterion]
            ax.annotate(f"{k.win}/{k.tie}/{k.loss}", (1.0, i), xytext=(-2, 4), textcoords="offset points",
                        ha="right", fontsize=7)  # fmt: skip
        ax.axvline(0.5, color="black", ls=":", lw=1)
        ax.set_xlim(0, 1)
        ax.set_yticks(y, names)
        ax.set_title(f"{criterion} (margin {result.margins.get(criterion, 0):.3f})", fontsize=9)
        ax.set_xlabel("manta's rate, (wins + ties/2) / prompts, 95% CI", fontsize=8)
    axes[0].invert_yaxis()
    fig.suptitle(f"manta vs each system, {len(result.prompts)} prompts; judge: {result.judge}", fontsize=8)
    fig.tight_layout()
    write_atomic(Path(path), lambda handle: fig.savefig(handle, format="png", dpi=110))
    plt.close(fig)


def write_evaluation(result: Evaluation, out: str | Path) -> tuple[Path, Path]:
    """`winrates.json` and `winrates.png` in `out`."""
    from zaya_config.atomic import write_text_atomic

    out = Path(out)
    write_text_atomic(out / "winrates.json", json.dumps(result.to_dict(), indent=1))
    plot_evaluation(result, out / "winrates.png")
    return out / "winrates.json", out / "winrates.png"
