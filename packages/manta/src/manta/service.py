"""What `services/compose` runs: compose a prompt's batch on one hardware profile, write plans, plot, render.

Writes into the run folder: `plans.json` (the batch), `summary.json` (resolved limits, each plan's cost
and whether it fits, batch metrics), `plans.png` (each plan's VRAM and latency against the budgets) and,
when rendering is on, `images/image_<i>.png`.
"""

from __future__ import annotations

import json
import logging
from dataclasses import asdict
from pathlib import Path

from zaya_config.atomic import write_atomic, write_text_atomic

from manta.composer import build_composer
from manta.config import MantaConfig, RenderConfig
from manta.evaluation.metrics import PlanEvaluator
from manta.evaluation.suite import SMOKE_JUDGE
from manta.limits import HardwareLimits, ResolvedLimits
from manta.plan import CompositionPlan, plans_to_json

log = logging.getLogger("manta.service")


def plot_plans(plans: list[CompositionPlan], limits: ResolvedLimits, path: Path) -> None:
    """Scatter of plans (VRAM, seconds per image) with the budget lines, as a PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5, 3.5))
    ax.scatter(
        [p.vram_bytes / 1e9 for p in plans], [p.latency_s for p in plans], c=range(len(plans)), cmap="viridis", zorder=3
    )
    for i, plan in enumerate(plans):
        ax.annotate(
            f"{i}: {plan.base_id} +{len(plan.adapters)}",
            (plan.vram_bytes / 1e9, plan.latency_s),
            fontsize=7,
            xytext=(3, 3),
            textcoords="offset points",
        )
    ax.axvline(limits.vram_budget_bytes / 1e9, color="tab:red", ls="--", label="VRAM budget")
    ax.axhline(limits.latency_budget_s, color="tab:orange", ls="--", label="latency budget")
    ax.set_xlabel("VRAM (GB)")
    ax.set_ylabel("seconds per image")
    ax.set_title(f"plans on {limits.name}", fontsize=9)
    ax.legend(fontsize=7)
    fig.tight_layout()
    write_atomic(path, lambda handle: fig.savefig(handle, format="png", dpi=120))
    plt.close(fig)


def run_compose(
    settings: MantaConfig,
    hardware: HardwareLimits,
    prompt: str,
    output_dir: str | Path,
    render: RenderConfig | None = None,
) -> list[CompositionPlan]:
    """Compose `settings.batch` plans for `prompt` under `hardware`, write them (and images) to output_dir."""
    out = Path(output_dir)
    composer = build_composer(settings)
    limits = hardware.resolved().with_cost_budget(settings.cost_budget)
    plans = composer.compose(prompt, limits, batch=settings.batch, seed=settings.seed)
    write_text_atomic(out / "plans.json", plans_to_json(plans))
    evaluator = PlanEvaluator(composer.index, composer.embedder, limits)
    summary = {
        "prompt": prompt,
        "limits": asdict(limits),
        "catalog": composer.catalog.source,
        "metrics": asdict(evaluator.batch(plans)),
        "metrics_judge": SMOKE_JUDGE,  # plan metrics, not images: `zaya manta eval` judges rendered images
        "plans": [
            {
                "base": p.base_id,
                "adapters": [a.id for a in p.adapters],
                "vram_bytes": p.vram_bytes,
                "latency_s": p.latency_s,
                "price": p.price,
                "fits": evaluator.fits(p),
            }
            for p in plans
        ],
    }
    write_text_atomic(out / "summary.json", json.dumps(summary, indent=1))
    plot_plans(plans, limits, out / "plans.png")
    for i, plan in enumerate(plans):
        log.info(
            "plan %d: %s + %s (%.2f GB, %.2f s/image)",
            i,
            plan.base_id,
            ", ".join(f"{a.id}@{a.weight:g}" for a in plan.adapters) or "no adapters",
            plan.vram_bytes / 1e9,
            plan.latency_s,
        )
    if render is not None and render.enabled:
        from manta.generation import DiffusersBackend

        backend = DiffusersBackend.from_render_config(composer.catalog, render)
        backend.render_batch(plans, out / "images", seed=settings.seed)
    return plans
