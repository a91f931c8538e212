"""One evaluation of manta's composer: opponents, controls, one judge, and the numbers a claim needs.

`evaluate` pits the composer (side A) against every opponent and every control on the same prompts with
the same judge, and measures how much of each prompt the composer serves: concept coverage (share of a
prompt's concepts that some adapter of the plan serves, averaged over plans) and adapters per image.
`Evaluation.to_dict()` is `winrates.json`: every rate is manta's win rate against that system (wins /
prompts, ties not won); `tallies` hold wins, ties and losses, and a control's own win rate is its losses
column over prompts. The judge's name is written with every number.
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
from manta.evaluation.winrate import PlanSystem, WinRateReport, compose_pairs, judge_pairs
from manta.limits import ResolvedLimits

SMOKE_JUDGE = "plan-metrics (smoke check: scores the plan metrics the composer optimises, no images)"
CONTROL_LIMIT = 0.30  # a control that wins this share of alignment or quality comparisons discredits the judge
CALIBRATION_PROMPTS, CALIBRATION_SEEDS = 6, 4  # an image judge's seed noise: manta's first plan of 6 prompts x 4


@dataclass
class Evaluation:
    judge: str
    hardware: str
    prompts: list[str]
    batch: int
    opponents: dict[str, WinRateReport] = field(default_factory=dict)
    controls: dict[str, WinRateReport] = field(default_factory=dict)
    coverage: float = 0.0
    adapters_per_image: float = 0.0
    prompt_source: str = ""
    margins: dict[str, float] = field(default_factory=dict)  # a comparison within its criterion's margin is a tie
    seed_noise: dict[str, float] = field(default_factory=dict)  # an image judge's per-image noise from the seed

    def control_win_rate(self, name: str, criterion: str) -> float:
        """How often control `name` beat manta on `criterion` (its losses column, over prompts)."""
        tally = self.controls[name].tallies[criterion]
        return tally.losses / tally.total if tally.total else 0.0

    def control_violations(self) -> list[str]:
        """Every (control, criterion) where a control won CONTROL_LIMIT or more of alignment or quality."""
        return [
            f"{name} wins {self.control_win_rate(name, c):.0%} of {c} comparisons (limit {CONTROL_LIMIT:.0%})"
            for name in self.controls
            for c in ("alignment", "quality")
            if self.control_win_rate(name, c) >= CONTROL_LIMIT
        ]

    def to_dict(self) -> dict[str, Any]:
        def rates(reports: dict[str, WinRateReport]) -> dict[str, dict[str, float]]:
            return {n: {c: round(r.tallies[c].win_rate, 4) for c in CRITERIA} for n, r in reports.items()}

        tallies = {
            name: {c: {"wins": t.wins, "ties": t.ties, "losses": t.losses} for c, t in report.tallies.items()}
            for name, report in {**self.opponents, **self.controls}.items()
        }
        return {
            "judge": self.judge,
            "rates": "manta's win rate against each system (wins / prompts; ties are not wins)",
            "hardware": self.hardware,
            "prompts": len(self.prompts),
            "prompt_source": self.prompt_source,
            "batch": self.batch,
            "margins": {c: round(m, 4) for c, m in self.margins.items()},
            "seed_noise": {c: round(v, 4) for c, v in self.seed_noise.items()},
            "opponents": rates(self.opponents),
            "controls": rates(self.controls),
            "control_violations": self.control_violations(),
            "control_win_rates": {
                n: {c: round(self.control_win_rate(n, c), 4) for c in CRITERIA} for n in self.controls
            },
            "tallies": tallies,
            "coverage": round(self.coverage, 4),
            "adapters_per_image": round(self.adapters_per_image, 4),
            "rows": {name: report.rows for name, report in {**self.opponents, **self.controls}.items()},
        }


def coverage_of(composer: Composer, prompts: Sequence[str], limits: ResolvedLimits, batch: int, seed: int = 0):
    """(mean concept coverage, mean adapters per image) of the composer's plans for `prompts`."""
    covered, adapters = [], []
    for i, prompt in enumerate(prompts):
        for plan in composer.compose(prompt, limits, batch=batch, seed=seed + i):
            served = {a.concept for a in plan.adapters}
            covered.append(len(served & set(plan.concepts)) / max(len(plan.concepts), 1))
            adapters.append(len(plan.adapters))
    return float(np.mean(covered)) if covered else 0.0, float(np.mean(adapters)) if adapters else 0.0


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
) -> Evaluation:
    """Win rates of the composer against each opponent and control, and its coverage, on `prompts`."""
    with getattr(composer.embedder, "remembering", nullcontext)():  # each prompt embedded once, not per system
        result = Evaluation(judge_name, limits.name, list(prompts), batch, prompt_source=prompt_source)
        calibrating = hasattr(judge, "calibrate")  # a judge of rendered images: ties set by its own seed noise
        firsts = list(prompts)[:CALIBRATION_PROMPTS] if calibrating else []
        cases = [(p, composer.compose(p, limits, batch=1, seed=seed + i)[0]) for i, p in enumerate(firsts)]
        groups = {"opponents": opponents, "controls": controls}
        pairs = {
            name: compose_pairs(prompts, composer, system, limits, batch=batch, seed=seed)
            for systems in groups.values()
            for name, system in systems.items()
        }
        if hasattr(judge, "prefetch"):  # every image at once: a batched backend renders one plan set-up's together
            batches = [plans for rows in pairs.values() for _, plans_a, plans_b in rows for plans in (plans_a, plans_b)]
            judge.prefetch(batches, cases, CALIBRATION_SEEDS)
        if calibrating:
            judge.calibrate(cases, CALIBRATION_SEEDS, batch)
            result.seed_noise = dict(judge.seed_noise)
        if hasattr(judge, "margins"):
            result.margins = dict(judge.margins)
        elif hasattr(judge, "margin"):
            result.margins = {c: judge.margin for c in CRITERIA}
        for group, systems in groups.items():
            for name in systems:
                getattr(result, group)[name] = judge_pairs(pairs[name], judge, names=("manta", name), progress=progress)
        result.coverage, result.adapters_per_image = coverage_of(composer, prompts, limits, batch, seed)
        return result


def plot_evaluation(result: Evaluation, path: str | Path) -> None:
    """One panel per criterion: manta's wins / ties / losses against every opponent and control."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from zaya_config.atomic import write_atomic

    reports = {**result.opponents, **{f"{n} (control)": r for n, r in result.controls.items()}}
    names = list(reports)
    fig, axes = plt.subplots(1, len(CRITERIA), figsize=(4 * len(CRITERIA), 0.5 * len(names) + 1.5), sharey=True)
    for ax, criterion in zip(axes, CRITERIA, strict=True):
        left = np.zeros(len(names))
        for part, colour in (("wins", "tab:green"), ("ties", "tab:gray"), ("losses", "tab:red")):
            values = np.array(
                [
                    getattr(reports[n].tallies[criterion], part) / max(reports[n].tallies[criterion].total, 1)
                    for n in names
                ]
            )
            ax.barh(names, values, left=left, color=colour, label=f"manta {part}")
            left += values
        ax.axvline(1 - CONTROL_LIMIT, color="black", ls=":", lw=1)
        ax.set_xlim(0, 1)
        ax.set_title(criterion, fontsize=9)
    axes[0].legend(fontsize=7, loc="lower left")
    fig.suptitle(f"manta vs opponents and controls; judge: {result.judge}", fontsize=8)
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
