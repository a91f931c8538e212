"""The exact composition solver: one base + adapters maximising relevance under the limits (a 0/1 MILP).

Variables: y_b (base b chosen), x_j (candidate j = adapter for one concept chosen), z_c (concept c
covered, continuous in [0, 1], equal to min(1, sum of its x) at the optimum). Maximise
    sum_b base_score_b y_b + sum_j score_j x_j + coverage_bonus sum_c z_c
subject to: exactly one base; <= k adapters per concept; each adapter at most once across concepts;
adapters only of the chosen base's family; <= max_adapters; VRAM, per-image latency and price within
budget. Solved by HiGHS through `scipy.optimize.milp`. The constraint matrix is built once per prompt;
the diversity sampler re-solves it with other scores and masks.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

import numpy as np
from scipy.optimize import Bounds, LinearConstraint, milp
from scipy.sparse import coo_array

from manta.errors import MantaError
from manta.index import CatalogIndex
from manta.limits import ResolvedLimits
from manta.relaxation import relaxed_choice
from manta.retrieval import Candidate, Retrieval

_GB = 1e9


@dataclass(frozen=True)
class Selection:
    """One solved composition: a base row, the chosen candidates, and the objective value."""

    base: int
    picks: tuple[Candidate, ...]
    objective: float

    @property
    def key(self) -> frozenset[int]:
        return frozenset([self.base, *(c.position for c in self.picks)])


def _fmt_limit(name: str, value: float) -> str:
    return {"vram": f"{value / _GB:.2f} GB", "latency": f"{value:.2f} s", "cost": f"{value:.4f} per image"}[name]


_LIMIT_KEYS = {
    "vram": "manta_hardware.vram_budget_bytes",
    "latency": "manta_hardware.latency_budget_s",
    "cost": "manta.cost_budget",
}


class CompositionProblem:
    """The MILP of one prompt under one set of limits."""

    def __init__(
        self,
        index: CatalogIndex,
        retrieval: Retrieval,
        limits: ResolvedLimits,
        adapters_per_concept: int,
        coverage_bonus: float,
        adapter_penalty: float = 0.0,
    ) -> None:
        self.index, self.retrieval, self.limits = index, retrieval, limits
        self.bases = sorted(retrieval.base_scores)
        self.candidates = list(retrieval.candidates)
        bases = [index.entry(p) for p in self.bases]
        adapters = [index.entry(c.position) for c in self.candidates]
        self.base_usage = {
            "vram": np.array([b.vram_bytes for b in bases], dtype=float),
            "latency": np.array([limits.image_latency_s(b.step_latency_ms) for b in bases]),
            "cost": np.array([b.price_per_image for b in bases]),
        }
        self.budgets = {
            "vram": float(limits.vram_budget_bytes),
            "latency": limits.latency_budget_s,
            "cost": limits.cost_budget,
        }
        self._check_feasible()
        self._prune(bases)
        bases = [index.entry(p) for p in self.bases]
        adapters = [index.entry(c.position) for c in self.candidates]
        B, J, C = len(bases), len(adapters), len(retrieval.concepts)
        self.shape = (B, J, C)
        per_image = limits.image_latency_s(1.0)
        usage = {
            "vram": (
                [b.vram_bytes / _GB for b in bases],
                [a.vram_bytes / _GB for a in adapters],
                limits.vram_budget_bytes / _GB,
            ),
            "latency": (
                [per_image * b.step_latency_ms for b in bases],
                [per_image * a.step_latency_ms for a in adapters],
                limits.latency_budget_s,
            ),
        }
        if limits.cost_budget is not None:
            usage["cost"] = (
                [b.price_per_image for b in bases],
                [a.price_per_image for a in adapters],
                limits.cost_budget,
            )
        self.base_scores = np.array([retrieval.base_scores[p] for p in self.bases])
        self.scores = np.array([c.score - adapter_penalty for c in self.candidates])
        self.coverage_bonus = coverage_bonus
        self.adapters_per_concept = adapters_per_concept
        # Dense arrays for the decomposed solve: R resources (VRAM GB, seconds per image, price).
        families = {f: i for i, f in enumerate(sorted({e.base_family for e in bases}))}
        self.base_family_B = np.array([families[e.base_family] for e in bases], dtype=np.int64)
        self.family_J = np.array([families.get(a.base_family, -1) for a in adapters], dtype=np.int64)
        self.concept_J = np.array([c.concept for c in self.candidates], dtype=np.int64)
        self.position_J = np.array([c.position for c in self.candidates], dtype=np.int64)
        names = list(usage)
        self.usage_JR = np.array([[usage[n][1][j] for n in names] for j in range(J)]).reshape(J, len(names))
        self.residual_BR = np.array([[usage[n][2] - usage[n][0][b] for n in names] for b in range(B)]).reshape(
            B, len(names)
        )
        self._bases_entries, self._adapter_entries, self._usage = bases, adapters, usage
        self._milp: tuple[LinearConstraint, np.ndarray] | None = None
        self._compatible_BJ: np.ndarray | None = None

    def _milp_model(self) -> tuple[LinearConstraint, np.ndarray]:
        """The sparse constraint matrix, built on first use (most prompts never need the MILP)."""
        if self._milp is not None:
            return self._milp
        bases, adapters, usage = self._bases_entries, self._adapter_entries, self._usage
        limits, adapters_per_concept = self.limits, self.adapters_per_concept
        B, J, C = self.shape
        rows, cols, vals, lo, hi = [], [], [], [], []

        def add_row(entries: list[tuple[int, float]], low: float, high: float) -> None:
            r = len(lo)
            for col, val in entries:
                rows.append(r)
                cols.append(col)
                vals.append(val)
            lo.append(low)
            hi.append(high)

        add_row([(b, 1.0) for b in range(B)], 1.0, 1.0)
        by_concept: dict[int, list[int]] = defaultdict(list)
        by_adapter: dict[int, list[int]] = defaultdict(list)
        by_family: dict[str, list[int]] = defaultdict(list)
        for j, (cand, entry) in enumerate(zip(self.candidates, adapters, strict=True)):
            by_concept[cand.concept].append(j)
            by_adapter[cand.position].append(j)
            by_family[entry.base_family].append(j)
        for js in by_concept.values():
            add_row([(B + j, 1.0) for j in js], -np.inf, adapters_per_concept)
        for js in by_adapter.values():
            if len(js) > 1:
                add_row([(B + j, 1.0) for j in js], -np.inf, 1.0)
        for family, js in by_family.items():
            big = float(min(len(js), limits.max_adapters))
            family_bases = [b for b, e in enumerate(bases) if e.base_family == family]
            add_row([(B + j, 1.0) for j in js] + [(b, -big) for b in family_bases], -np.inf, 0.0)
        if J:
            add_row([(B + j, 1.0) for j in range(J)], -np.inf, limits.max_adapters)
        for base_use, adapter_use, budget in usage.values():
            add_row(
                [(b, u) for b, u in enumerate(base_use)] + [(B + j, u) for j, u in enumerate(adapter_use)],
                -np.inf,
                budget,
            )
        for c, js in by_concept.items():
            add_row([(B + J + c, 1.0)] + [(B + j, -1.0) for j in js], -np.inf, 0.0)
        matrix = coo_array((vals, (rows, cols)), shape=(len(lo), B + J + C)).tocsr()
        self._milp = (LinearConstraint(matrix, np.array(lo), np.array(hi)), np.r_[np.ones(B + J), np.zeros(C)])
        return self._milp

    def _check_feasible(self) -> None:
        """A base alone is always the cheapest plan; if none fits, name the limit(s) that bind."""
        active = [n for n in ("vram", "latency", "cost") if self.budgets[n] is not None]
        fits = {n: self.base_usage[n] <= self.budgets[n] * (1 + 1e-9) for n in active}
        self.fitting_bases = np.logical_and.reduce([fits[n] for n in active])
        if self.fitting_bases.any():
            return
        bases = [self.index.entry(p).id for p in self.bases]
        for name in active:
            if not fits[name].any():
                best = int(np.argmin(self.base_usage[name]))
                raise MantaError(
                    f"infeasible limits: the {name} limit binds: {_LIMIT_KEYS[name]} allows "
                    f"{_fmt_limit(name, self.budgets[name])} (profile {self.limits.name!r}) but the cheapest base "
                    f"checkpoint, {bases[best]!r}, needs {_fmt_limit(name, self.base_usage[name][best])}; raise "
                    "that limit or add a smaller checkpoint to the catalog"
                )
        for i, first in enumerate(active):
            for second in active[i + 1 :]:
                if not (fits[first] & fits[second]).any():
                    raise MantaError(
                        f"infeasible limits: the {first} and {second} limits bind together (profile "
                        f"{self.limits.name!r}): checkpoints within {_LIMIT_KEYS[first]} "
                        f"({', '.join(b for b, ok in zip(bases, fits[first], strict=True) if ok)}) all exceed "
                        f"{_LIMIT_KEYS[second]}; relax one of them"
                    )
        raise MantaError(
            f"infeasible limits: no base checkpoint meets {', '.join(_LIMIT_KEYS[n] for n in active)} "
            f"at once (profile {self.limits.name!r}); relax one of them"
        )

    def _prune(self, bases: list) -> None:
        """Drop bases that do not fit alone and adapters that fit with no base of their family (exactness kept:
        neither could be part of any feasible plan); fewer variables make every re-solve faster."""
        keep = np.flatnonzero(self.fitting_bases)
        self.bases = [self.bases[i] for i in keep]
        active = [n for n in ("vram", "latency", "cost") if self.budgets[n] is not None]
        headroom: dict[str, dict[str, float]] = {}
        for i in keep:
            family = bases[i].base_family
            room = headroom.setdefault(family, {n: -np.inf for n in active})
            for n in active:
                room[n] = max(room[n], self.budgets[n] - self.base_usage[n][i])
        per_image = self.limits.image_latency_s(1.0)

        def usage(entry, name: str) -> float:
            return {
                "vram": entry.vram_bytes,
                "latency": per_image * entry.step_latency_ms,
                "cost": entry.price_per_image,
            }[name]

        kept = []
        for cand in self.candidates:
            entry = self.index.entry(cand.position)
            room = headroom.get(entry.base_family)
            if room is not None and all(usage(entry, n) <= room[n] * (1 + 1e-9) + 1e-12 for n in active):
                kept.append(cand)
        self.candidates = kept
        self.fitting_bases = np.ones(len(self.bases), dtype=bool)

    def solve(
        self,
        scores: np.ndarray | None = None,
        allowed: np.ndarray | None = None,
        allowed_bases: np.ndarray | None = None,
    ) -> Selection:
        """The exact optimum: bases in order of their relaxed bound; a base whose relaxed choice fits is solved
        by it, a base whose bound cannot beat the best so far is skipped, any other goes to the MILP alone."""
        B, J, _ = self.shape
        score_J = self.scores if scores is None else scores
        allowed_J = np.ones(J, dtype=bool) if allowed is None else allowed.astype(bool)
        open_B = np.ones(B, dtype=bool) if allowed_bases is None else allowed_bases.astype(bool)
        tol = 1e-9
        if self._compatible_BJ is None:  # same family and fits that base's leftover budgets on its own
            fits_BJ = (self.usage_JR[None, :, :] <= self.residual_BR[:, None, :] * (1 + tol) + tol).all(axis=2)
            self._compatible_BJ = fits_BJ & (self.family_J[None, :] == self.base_family_B[:, None])
        ok_BJ = self._compatible_BJ & allowed_J[None, :]
        relaxed: dict[bytes, tuple[np.ndarray, float]] = {}
        bounds = []
        for b in np.flatnonzero(open_B):
            key = ok_BJ[b].tobytes()
            if key not in relaxed:
                relaxed[key] = relaxed_choice(
                    score_J,
                    self.concept_J,
                    ok_BJ[b],
                    self.adapters_per_concept,
                    self.limits.max_adapters,
                    self.coverage_bonus,
                )
            bounds.append((self.base_scores[b] + relaxed[key][1], int(b), key))
        if not bounds:
            raise MantaError("every base checkpoint is masked out; allow at least one base")
        bounds.sort(key=lambda t: (-t[0], t[1]))
        best: Selection | None = None
        for bound, b, key in bounds:
            if best is not None and bound <= best.objective + 1e-12:
                break
            chosen, _ = relaxed[key]
            fits = (self.usage_JR[chosen].sum(axis=0) <= self.residual_BR[b] * (1 + tol) + tol).all()
            if fits and len(set(self.position_J[chosen].tolist())) == len(chosen):
                picks = tuple(self.candidates[j] for j in sorted(chosen.tolist()))
                candidate = Selection(self.bases[b], picks, float(bound))
            else:
                only_b = np.zeros(B, dtype=bool)
                only_b[b] = True
                candidate = self.solve_milp(score_J, allowed_J & ok_BJ[b], only_b)
            if best is None or candidate.objective > best.objective + 1e-12:
                best = candidate
        return best

    def solve_milp(
        self,
        scores: np.ndarray | None = None,
        allowed: np.ndarray | None = None,
        allowed_bases: np.ndarray | None = None,
    ) -> Selection:
        """The optimum of the whole MILP by HiGHS, optionally with other scores or candidates or bases masked out."""
        B, J, C = self.shape
        constraint, integrality = self._milp_model()
        score_J = self.scores if scores is None else scores
        cost = -np.r_[self.base_scores, score_J, np.full(C, self.coverage_bonus)]
        upper = np.ones(B + J + C)
        if allowed is not None:
            upper[B : B + J] = allowed.astype(float)
        if allowed_bases is not None:
            upper[:B] = allowed_bases.astype(float)
        result = milp(
            cost,
            constraints=constraint,
            integrality=integrality,
            bounds=Bounds(np.zeros(B + J + C), upper),
            options={"presolve": True},
        )
        if result.status != 0 or result.x is None:
            raise MantaError(
                f"the composition solver failed ({result.message}); this is a bug if the limits "
                "admit a base checkpoint alone, please report it with the prompt and catalog"
            )
        x = np.round(result.x).astype(int)
        base = self.bases[int(np.argmax(x[:B]))]
        picks = tuple(c for c, chosen in zip(self.candidates, x[B : B + J], strict=True) if chosen)
        return Selection(base, picks, float(-result.fun))
