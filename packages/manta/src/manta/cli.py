"""`zaya manta compose|eval`: compose plans for a prompt on a machine, or judge manta against the baseline.

Heavy imports (sentence-transformers, scipy) live inside the commands so `zaya --help` stays fast.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from zaya_config.cli_errors import reports
from zaya_config.errors import ZayaConfigError

from manta.errors import MantaError

app = typer.Typer(
    help="Model-adapter composition under hardware and cost limits (MANTA-style, offline).", no_args_is_help=True
)
console = Console()


def _default_cache() -> str:
    return os.environ.get("ZAYA_CACHE", os.path.join(".", ".cache", "zaya"))


def _setup(
    catalog: str,
    hardware: str,
    batch: int,
    cost_budget: float | None,
    model_path: str | None,
    cache_dir: str | None,
    seed: int,
):
    from manta.composer import build_composer, limits_from_config
    from manta.config import MantaConfig

    settings = MantaConfig(
        catalog=catalog,
        model_path=model_path,
        cache_dir=cache_dir or _default_cache(),
        batch=batch,
        cost_budget=cost_budget,
        seed=seed,
    )
    limits = limits_from_config(hardware, cost_budget)
    return build_composer(settings, progress=True), limits


@app.command("compose")
@reports(MantaError, ZayaConfigError)
def compose_command(
    prompt: str = typer.Argument(..., help="What the image should show"),
    hardware: str = typer.Option("desktop-24gb", "--hardware", "-H", help="manta_hardware preset"),
    catalog: str = typer.Option("example", "--catalog", "-c", help=".jsonl/.csv/.parquet catalog or 'example'"),
    batch: int = typer.Option(4, "--batch", "-n", help="Images (plans) in the batch"),
    cost_budget: float = typer.Option(None, "--cost-budget", help="Max price per image (default: unlimited)"),
    model_path: str = typer.Option(None, "--model-path", help="Local sentence-transformers folder"),
    cache_dir: str = typer.Option(None, "--cache-dir", help="Embedding cache folder (default: $ZAYA_CACHE)"),
    seed: int = typer.Option(0, "--seed"),
    out: Path = typer.Option(None, "--out", "-o", help="Write the plans as JSON here"),
) -> None:
    """Compose BATCH plans (base + adapters with weights) for PROMPT that fit the hardware profile."""
    from manta.concepts import check_prompt
    from manta.plan import plans_to_json

    check_prompt(prompt)
    composer, limits = _setup(catalog, hardware, batch, cost_budget, model_path, cache_dir, seed)
    plans = composer.compose(prompt, limits, batch=batch, seed=seed)
    table = Table(
        "#",
        "base",
        "adapters (weight)",
        "VRAM GB",
        "s/image",
        "price",
        "relevance",
        title=escape(f"{prompt!r} on {limits.name}"),
    )
    for i, plan in enumerate(plans):
        adapters = ", ".join(f"{a.id} ({a.weight:g})" for a in plan.adapters) or "-"
        table.add_row(
            str(i),
            escape(plan.base_id),
            escape(adapters),
            f"{plan.vram_bytes / 1e9:.2f}",
            f"{plan.latency_s:.2f}",
            f"{plan.price:.4f}",
            f"{plan.relevance:.3f}",
        )
    console.print(table)
    if out is not None:
        from zaya_config.atomic import write_text_atomic

        write_text_atomic(out, plans_to_json(plans))
        console.print(f"plans written to {escape(str(out))}")


@app.command("eval")
@reports(MantaError, ZayaConfigError)
def eval_command(
    hardware: str = typer.Option("desktop-24gb", "--hardware", "-H", help="manta_hardware preset"),
    catalog: str = typer.Option("example", "--catalog", "-c", help=".jsonl/.csv/.parquet catalog or 'example'"),
    batch: int = typer.Option(4, "--batch", "-n", help="Images (plans) per prompt"),
    prompts: Path = typer.Option(None, "--prompts", help="Text file, one prompt a line (default: shipped set)"),
    coco: Path = typer.Option(None, "--coco", help="Local COCO captions JSON to draw prompts from"),
    limit: int = typer.Option(None, "--limit", help="Use at most this many prompts"),
    masking: bool = typer.Option(False, "--baseline-masking", help="Give the baseline Stylus-style masking"),
    model_path: str = typer.Option(None, "--model-path", help="Local sentence-transformers folder"),
    cache_dir: str = typer.Option(None, "--cache-dir", help="Embedding cache folder (default: $ZAYA_CACHE)"),
    seed: int = typer.Option(0, "--seed"),
    out: Path = typer.Option(None, "--out", "-o", help="Folder for report.json and win_rates.png"),
) -> None:
    """Win rates of manta vs the Stylus-like baseline with the offline judge (diversity, alignment, quality)."""
    from manta.evaluation.baseline import StylusLikeBaseline
    from manta.evaluation.judges import OfflineJudge
    from manta.evaluation.metrics import PlanEvaluator
    from manta.evaluation.prompts import load_coco_captions, shipped_prompts
    from manta.evaluation.winrate import plot_win_rates, win_rates

    if coco is not None:
        texts = load_coco_captions(coco, limit=limit, seed=seed)
    elif prompts is not None:
        if not prompts.is_file():
            raise MantaError(f"prompt file {prompts} does not exist")
        texts = [t.strip() for t in prompts.read_text(encoding="utf-8").splitlines() if t.strip()]
    else:
        texts = shipped_prompts()
    texts = texts[:limit] if limit else texts
    composer, limits = _setup(catalog, hardware, batch, None, model_path, cache_dir, seed)
    baseline = StylusLikeBaseline(composer.index, composer.embedder, masking=masking)
    judge = OfflineJudge(PlanEvaluator(composer.index, composer.embedder, limits))
    report = win_rates(texts, composer, baseline, judge, limits, batch=batch, seed=seed, progress=True)
    table = Table(
        "criterion",
        "wins",
        "ties",
        "losses",
        "win rate",
        title=escape(
            f"manta vs {baseline.name}{' (masked)' if masking else ''} on {limits.name}, {len(texts)} prompts"
        ),
    )
    for name, tally in report.tallies.items():
        table.add_row(name, str(tally.wins), str(tally.ties), str(tally.losses), f"{tally.win_rate:.0%}")
    console.print(table)
    if out is not None:
        from zaya_config.atomic import write_text_atomic

        write_text_atomic(out / "report.json", json.dumps(report.to_dict(), indent=1))
        plot_win_rates(report, str(out / "win_rates.png"))
        console.print(f"report written to {escape(str(out))}")
