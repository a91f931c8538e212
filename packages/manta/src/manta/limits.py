"""Hardware limits of a composition (config group `manta_hardware`) and the cost model that checks them.

Catalog latencies are per denoising step as measured (the shipped catalogs': the fitted cost model of one
H200, fp16, batch 2 guided, `benchmarks/catalog_costs.py`); a profile multiplies them by `latency_scale`, how
many times slower the user's machine runs these pipelines than that measurement did. The scale is the user's
input, never derived from a FLOP ratio: on the H200 both SD 1.5 and SDXL are bound by the host launching
kernels (0.57 s an image for ~2 TFLOP of UNet work), so peak FLOP/s says nothing about their seconds; measure
it with `benchmarks/bench_costs.py` on the machine. A profile's VRAM budget may come from a zaya-config
`hardware` profile's memory capacity. A plan's cost is additive:
VRAM = base + adapters, latency per image = steps x scale x (base + adapters per-step), price likewise.
"""

from __future__ import annotations

from dataclasses import dataclass

from zaya_config.checks import in_range, non_negative, positive
from zaya_config.validated import ValidatedConfig

from manta.catalog import CatalogEntry

# The machine the shipped catalogs' per-step latencies were measured on (the fitted cost model's runs).
MEASURED_ON = "one NVIDIA H200 (fp16, batch 2 guided, 20 steps; benchmarks/results/costs-h200)"


@dataclass
class HardwareLimits(ValidatedConfig):
    """What the user's machine allows per image: memory, time, and how many adapters it can stack."""

    name: str = "desktop-24gb"
    base_profile: str | None = None  # a zaya-config `hardware` preset to derive null fields from
    vram_budget_bytes: int | None = 24 * 2**30
    vram_usable_fraction: float = 0.9  # of the profile's capacity, when the budget is derived
    latency_budget_s: float = 10.0  # per image
    latency_scale: float = 1.0  # x catalog latencies: how much slower than the measured machine (user input)
    num_steps: int = 30
    max_adapters: int = 6

    def validate_fields(self) -> None:
        """Reject limits no plan could be checked against, before any work."""
        positive("vram_budget_bytes", self.vram_budget_bytes, optional=True)
        in_range("vram_usable_fraction", self.vram_usable_fraction, 0.05, 1.0)
        positive("latency_budget_s", self.latency_budget_s)
        positive("latency_scale", self.latency_scale)
        positive("num_steps", self.num_steps)
        non_negative("max_adapters", self.max_adapters)
        if self.base_profile is None and self.vram_budget_bytes is None:
            from zaya_config.errors import invalid

            raise invalid(
                "base_profile", None, "a zaya hardware preset name when vram_budget_bytes is null (derived from it)"
            )

    def resolved(self) -> ResolvedLimits:
        """Fill derived fields from the zaya-config hardware profile and return concrete numbers."""
        self.validate()
        vram, scale = self.vram_budget_bytes, self.latency_scale
        if vram is None:
            from zaya_config import hardware

            vram = int(hardware(self.base_profile).hbm_capacity_bytes * self.vram_usable_fraction)
        return ResolvedLimits(
            self.name,
            int(vram),
            float(self.latency_budget_s),
            float(scale),
            int(self.num_steps),
            int(self.max_adapters),
        )


@dataclass(frozen=True)
class ResolvedLimits:
    """Concrete limits for one composition; `cost_budget` (price per image) None means unlimited."""

    name: str
    vram_budget_bytes: int
    latency_budget_s: float
    latency_scale: float
    num_steps: int
    max_adapters: int
    cost_budget: float | None = None

    def with_cost_budget(self, cost_budget: float | None) -> ResolvedLimits:
        return ResolvedLimits(
            self.name,
            self.vram_budget_bytes,
            self.latency_budget_s,
            self.latency_scale,
            self.num_steps,
            self.max_adapters,
            cost_budget,
        )

    def image_latency_s(self, step_latency_ms: float) -> float:
        """Seconds per image for a summed per-step latency on the reference device."""
        return self.num_steps * self.latency_scale * step_latency_ms / 1000.0


@dataclass(frozen=True)
class PlanCost:
    """What one base + adapters combination costs per image."""

    vram_bytes: int
    latency_s: float
    price: float
    adapters: int

    def violations(self, limits: ResolvedLimits) -> list[str]:
        """Names of the limits this cost exceeds (empty when it fits)."""
        broken = []
        if self.vram_bytes > limits.vram_budget_bytes:
            broken.append("vram")
        if self.latency_s > limits.latency_budget_s * (1 + 1e-9):
            broken.append("latency")
        if limits.cost_budget is not None and self.price > limits.cost_budget + 1e-12:
            broken.append("cost")
        if self.adapters > limits.max_adapters:
            broken.append("max_adapters")
        return broken


def plan_cost(base: CatalogEntry, adapters: list[CatalogEntry], limits: ResolvedLimits) -> PlanCost:
    """Per-image VRAM, latency and price of `base` with `adapters` loaded unfused."""
    step_ms = base.step_latency_ms + sum(a.step_latency_ms for a in adapters)
    return PlanCost(
        vram_bytes=base.vram_bytes + sum(a.vram_bytes for a in adapters),
        latency_s=limits.image_latency_s(step_ms),
        price=base.price_per_image + sum(a.price_per_image for a in adapters),
        adapters=len(adapters),
    )
