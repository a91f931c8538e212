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


def load_recorded(path) -> tuple[dict[str, dict[str, LinearCost]], dict[str, int], dict[str, str]]:
    """(models, denoising steps per image, device) per architecture of a recorded `costs.json` (bench_costs.py)."""
    import json
    from pathlib import Path

    data = json.loads(Path(path).read_text(encoding="utf-8"))
    models = {arch: {t: LinearCost(**c) for t, c in targets.items()} for arch, targets in data["model"].items()}
    return models, {a: int(s) for a, s in data["steps"].items()}, dict(data.get("devices", {}))


def entry_costs(model: dict[str, LinearCost], steps: int, rank: int | None) -> tuple[int, float]:
    """(VRAM bytes, ms per denoising step) of a catalog entry by the fitted model of its architecture: a
    checkpoint (rank None) is the model's base; an adapter of rank r adds per_lora + per_rank x r (its peak
    memory and its seconds per image, over the steps they were measured at)."""
    peak, seconds = model["peak_bytes"], model["seconds_per_image"]
    if rank is None:
        vram, per_image = peak.base, seconds.base
    else:
        vram, per_image = peak.per_lora + peak.per_rank * rank, seconds.per_lora + seconds.per_rank * rank
    if vram <= 0 or per_image <= 0:
        raise MantaError(f"the fitted cost model predicts a non-positive cost at rank {rank}: {vram} B, {per_image} s")
    return round(vram), round(1000.0 * per_image / steps, 3)


def costed_rows(rows: list[dict], models: dict[str, dict[str, LinearCost]], steps: dict[str, int]) -> list[dict]:
    """Catalog rows with `vram_bytes` and `step_latency_ms` from the fitted model of their base family (rows of a
    family the model does not cover are returned as they are)."""
    out = []
    for row in rows:
        family = row.get("base_family")
        if family in models:
            rank = None if row.get("kind") == "checkpoint" else int(row["rank"])
            vram, ms = entry_costs(models[family], steps[family], rank)
            row = {**row, "vram_bytes": vram, "step_latency_ms": ms}
        out.append(row)
    return out
