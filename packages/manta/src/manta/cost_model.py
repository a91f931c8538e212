"""A cost model fitted to measurements: peak memory and seconds per image of a base with LoRAs of given ranks.

Per architecture, both costs are modelled as linear in the number of active LoRAs and their summed rank:
    cost(ranks) = base + per_lora x len(ranks) + per_rank x sum(ranks)
(an unfused LoRA adds two thin matmuls per adapted layer, whose memory and time grow with the rank, plus a
fixed launch / bookkeeping cost per adapter). The coefficients are least-squares fits to the measurements of
`benchmarks/bench_costs.py`; `check` reports each measurement's relative prediction error.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from manta.errors import MantaError

TARGETS = ("peak_bytes", "seconds_per_image")


@dataclass(frozen=True)
class LinearCost:
    base: float
    per_lora: float
    per_rank: float

    def predict(self, ranks: list[int]) -> float:
        return self.base + self.per_lora * len(ranks) + self.per_rank * sum(ranks)


def fit_costs(measurements: list[dict]) -> dict[str, dict[str, LinearCost]]:
    """{arch: {target: LinearCost}} from rows {"arch", "ranks": [...], "peak_bytes", "seconds_per_image"}."""
    models: dict[str, dict[str, LinearCost]] = {}
    for arch in sorted({m["arch"] for m in measurements}):
        rows = [m for m in measurements if m["arch"] == arch]
        if len(rows) < 3:
            raise MantaError(f"{arch}: {len(rows)} measurements; the cost model needs at least 3")
        X = np.array([[1.0, len(m["ranks"]), sum(m["ranks"])] for m in rows])
        models[arch] = {}
        for target in TARGETS:
            y = np.array([float(m[target]) for m in rows])
            coef, *_ = np.linalg.lstsq(X, y, rcond=None)
            models[arch][target] = LinearCost(*map(float, coef))
    return models


def check(models: dict[str, dict[str, LinearCost]], measurements: list[dict]) -> list[dict]:
    """Each measurement with its predictions and relative errors."""
    out = []
    for m in measurements:
        row = {"arch": m["arch"], "ranks": m["ranks"]}
        for target in TARGETS:
            predicted = models[m["arch"]][target].predict(m["ranks"])
            row[target] = m[target]
            row[f"{target}_predicted"] = predicted
            row[f"{target}_error"] = abs(predicted - m[target]) / max(abs(m[target]), 1e-12)
        out.append(row)
    return out


def to_dict(models: dict[str, dict[str, LinearCost]]) -> dict:
    return {arch: {t: asdict(c) for t, c in targets.items()} for arch, targets in models.items()}
