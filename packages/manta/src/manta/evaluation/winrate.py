"""Pairwise win rates of system A over system B on a prompt set, with any judge."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, is_dataclass
from typing import Any, Protocol

from rich.progress import track

from manta.evaluation.judges import CRITERIA, Judge
from manta.evaluation.stats import Comparison, compare_outcomes
from manta.limits import ResolvedLimits
from manta.plan import CompositionPlan


class PlanSystem(Protocol):
    def compose(self, prompt: str, limits: ResolvedLimits, batch: int = 1, seed: int = 0) -> list[CompositionPlan]: ...


@dataclass
class Tally:
    """Wins, ties and losses of A against B on one criterion."""

    wins: int = 0
    ties: int = 0
    losses: int = 0

    @property
    def total(self) -> int:
        return self.wins + self.ties + self.losses

    @property
    def win_rate(self) -> float:
        """Share of prompts where A was judged better (ties count as not won)."""
        return self.wins / self.total if self.total else 0.0

    @property
    def decided_win_rate(self) -> float:
        """Wins among prompts that were not ties."""
        decided = self.wins + self.losses
        return self.wins / decided if decided else 0.5


@dataclass
class WinRateReport:
    """Per-criterion tallies, per-prompt outcomes (+1 / 0 / -1 for A) and measured differences, and details."""

    system_a: str
    system_b: str
    tallies: dict[str, Tally] = field(default_factory=lambda: {name: Tally() for name in CRITERIA})
    rows: list[dict[str, Any]] = field(default_factory=list)
    outcomes: dict[str, list[int]] = field(default_factory=lambda: {name: [] for name in CRITERIA})
    diffs: dict[str, list[float]] = field(default_factory=lambda: {name: [] for name in CRITERIA})

    def comparisons(self) -> dict[str, Comparison]:
        """Per criterion: the rate with its paired bootstrap interval and the sign test (`manta.evaluation.stats`);
        the measured difference's interval where the judge measured a value for every prompt."""
        return {
            name: compare_outcomes(
                self.outcomes[name],
                self.diffs[name] if len(self.diffs[name]) == len(self.outcomes[name]) else None,
            )
            for name in CRITERIA
        }

    def to_dict(self) -> dict[str, Any]:
        return {
            "system_a": self.system_a,
            "system_b": self.system_b,
            "win_rates": {
                n: {
                    "wins": t.wins,
                    "ties": t.ties,
                    "losses": t.losses,
                    "win_rate": t.win_rate,
                    "decided_win_rate": t.decided_win_rate,
                }
                for n, t in self.tallies.items()
            },
            "rows": self.rows,
        }


def _plain(value: Any) -> Any:
    return asdict(value) if is_dataclass(value) else value


def _measured(value: Any, name: str) -> float | None:
    """A judge's measured value of criterion `name` for one batch (a dict's entry or a dataclass's field)."""
    found = value.get(name) if isinstance(value, dict) else getattr(value, name, None)
    return float(found) if isinstance(found, int | float) else None


Pairs = list[tuple[str, list[CompositionPlan], list[CompositionPlan]]]  # (prompt, A's batch, B's batch)


def compose_pairs(
    prompts: Sequence[str],
    system_a: PlanSystem,
    system_b: PlanSystem,
    limits: ResolvedLimits,
    batch: int = 4,
    seed: int = 0,
) -> Pairs:
    """A batch per prompt from each system, prompt i composed with seed + i."""
    return [
        (
            prompt,
            system_a.compose(prompt, limits, batch=batch, seed=seed + i),
            system_b.compose(prompt, limits, batch=batch, seed=seed + i),
        )
        for i, prompt in enumerate(prompts)
    ]


def judge_pairs(
    pairs: Pairs,
    judge: Judge,
    names: tuple[str, str] = ("manta", "baseline"),
    progress: bool = False,
    render_seeds: Sequence[tuple[int, int]] | None = None,
) -> WinRateReport:
    """Judge each prompt's two batches and tally A's wins per criterion; a judge that renders draws pair i's
    batches from seeds `render_seeds[i]` (A's first seed, B's first seed; default 0 and 0)."""
    report = WinRateReport(*names)
    for i, (prompt, plans_a, plans_b) in enumerate(track(pairs, description="judging", disable=not progress)):
        if render_seeds is None:
            verdict = judge.judge(prompt, plans_a, plans_b)
        else:
            verdict = judge.judge(prompt, plans_a, plans_b, seed_a=render_seeds[i][0], seed_b=render_seeds[i][1])
        for name in CRITERIA:
            tally = report.tallies[name]
            score_a, score_b = verdict.a[name], verdict.b[name]
            outcome = 1 if score_a > score_b else -1 if score_a < score_b else 0
            tally.wins, tally.losses = tally.wins + (outcome == 1), tally.losses + (outcome == -1)
            tally.ties += outcome == 0
            report.outcomes[name].append(outcome)
            a, b = _measured(verdict.details.get("a"), name), _measured(verdict.details.get("b"), name)
            if a is not None and b is not None:
                report.diffs[name].append(a - b)
        report.rows.append(
            {
                "prompt": prompt,
                "a": verdict.a,
                "b": verdict.b,
                **{k: _plain(v) for k, v in verdict.details.items() if k in ("a", "b")},
            }
        )
    return report


def win_rates(
    prompts: Sequence[str],
    system_a: PlanSystem,
    system_b: PlanSystem,
    judge: Judge,
    limits: ResolvedLimits,
    batch: int = 4,
    seed: int = 0,
    names: tuple[str, str] = ("manta", "baseline"),
    progress: bool = False,
) -> WinRateReport:
    """Compose a batch per prompt with both systems, judge them, and tally A's wins per criterion."""
    return judge_pairs(compose_pairs(prompts, system_a, system_b, limits, batch, seed), judge, names, progress)


def plot_win_rates(report: WinRateReport, path: str) -> None:
    """Stacked bars of wins / ties / losses per criterion, written as a PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from zaya_config.atomic import write_atomic

    names = list(report.tallies)
    fig, ax = plt.subplots(figsize=(5, 3))
    left = [0.0] * len(names)
    for part, colour in (("wins", "tab:green"), ("ties", "tab:gray"), ("losses", "tab:red")):
        values = [getattr(report.tallies[n], part) / max(report.tallies[n].total, 1) for n in names]
        ax.barh(names, values, left=left, color=colour, label=part)
        left = [a + b for a, b in zip(left, values, strict=True)]
    ax.set_xlim(0, 1)
    ax.set_xlabel(f"share of prompts ({report.system_a} vs {report.system_b})")
    ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    write_atomic(path, lambda handle: fig.savefig(handle, format="png", dpi=120))
    plt.close(fig)
