"""`zaya manta compose|eval`: compose plans for a prompt on a machine, or judge manta against the baseline.

Heavy imports (sentence-transformers, scipy) live inside the commands so `zaya --help` stays fast.
"""

from __future__ import annotations

import os
from pathlib import Path

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from zaya_config.cli_errors import fail, reports
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
    catalog: str = typer.Option(
        "example", "--catalog", "-c", help=".jsonl/.csv/.parquet catalog, or a shipped one: example, everyday, world"
    ),
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
    judge: str = typer.Option(
        "world",
        "--judge",
        "-j",
        help="'world' (images judged by the tiny world's judge), 'clip:<local CLIP folder>' (images judged by "
        "CLIP; the catalog needs local model paths), or 'plan-metrics' (fast smoke check on plan metrics, no images)",
    ),
    world: Path = typer.Option(None, "--world", help="A built tiny world (default: the one shipped with manta)"),
    hardware: str = typer.Option(
        None, "--hardware", "-H", help="manta_hardware preset (default: tiny-cpu for the world, else desktop-24gb)"
    ),
    catalog: str = typer.Option(
        None,
        "--catalog",
        "-c",
        help="Catalog file or shipped name: example, everyday, world (default: the world's; example for plan-metrics)",
    ),
    batch: int = typer.Option(4, "--batch", "-n", help="Images (plans) per prompt"),
    prompts: Path = typer.Option(None, "--prompts", help="Text file, one prompt a line"),
    coco: str = typer.Option(
        None,
        "--coco",
        help="COCO captions JSON to draw prompts from ('shipped': 1,000 COCO val2014 images' captions in manta)",
    ),
    limit: int = typer.Option(None, "--limit", help="Use at most this many prompts"),
    steps: int = typer.Option(20, "--steps", help="Denoising steps per rendered image"),
    model_path: str = typer.Option(None, "--model-path", help="Local sentence-transformers folder"),
    cache_dir: str = typer.Option(None, "--cache-dir", help="Embedding cache folder (default: $ZAYA_CACHE)"),
    seed: int = typer.Option(0, "--seed"),
    out: Path = typer.Option(None, "--out", "-o", help="Folder for winrates.json and winrates.png"),
) -> None:
    """Win rates of manta against Stylus (as published and under limits) and two controls, with the judge named."""
    from manta.evaluation.judges import CRITERIA
    from manta.evaluation.suite import AA_NAME

    result = _evaluate(judge, world, hardware, catalog, batch, prompts, coco, limit, steps, model_path, cache_dir, seed)

    for group in ("aa", "opponents", "controls"):
        table = Table(
            "vs",
            *CRITERIA,
            title=escape(
                f"manta vs {group} on {result.hardware}, {len(result.prompts)} prompts; judge: {result.judge}"
                + ("; rate = (wins + ties/2) / prompts [95% CI] wins/ties/losses" if group == "aa" else "")
            ),
        )
        per = {AA_NAME: result.aa.comparisons()} if group == "aa" and result.aa else result.comparisons(group)
        for name, stats in per.items():
            table.add_row(
                escape(name),
                *(f"{k.rate:.0%} [{k.ci[0]:.0%}, {k.ci[1]:.0%}] {k.win}/{k.tie}/{k.loss}" for k in stats.values()),
            )
        console.print(table)
    console.print(f"concept coverage {result.coverage:.2f}, adapters per image {result.adapters_per_image:.2f}")
    if out is not None:
        from manta.evaluation.suite import write_evaluation

        write_evaluation(result, out)
        console.print(f"winrates.json and winrates.png written to {escape(str(out))}")


def _prompt_texts(prompts: Path | None, coco: str | None, limit: int | None, seed: int) -> tuple[list[str] | None, str]:
    from manta.errors import MantaError
    from manta.evaluation.prompts import load_coco_captions

    if coco is not None:
        return load_coco_captions(coco, limit=limit, seed=seed), f"COCO captions from {coco}"
    if prompts is not None:
        if not prompts.is_file():
            raise MantaError(f"prompt file {prompts} does not exist")
        texts = [
            t.strip() for t in prompts.read_text(encoding="utf-8").splitlines() if t.strip() and not t.startswith("#")
        ]
        if not texts:
            raise MantaError(f"prompt file {prompts} has no prompts (one a line)")
        return texts[:limit] if limit else texts, str(prompts)
    return None, ""


def _evaluate(judge, world, hardware, catalog, batch, prompts, coco, limit, steps, model_path, cache_dir, seed):
    from manta.errors import MantaError
    from manta.evaluation.prompts import shipped_prompts
    from manta.evaluation.suite import SMOKE_JUDGE, evaluate
    from manta.evaluation.world_eval import (
        RENDER,
        WORLD_HARDWARE,
        WORLD_JUDGE,
        image_judge,
        judge_accuracy,
        systems,
        world_prompts,
        world_seeds,
    )
    from manta.world.build import shipped_world

    if judge not in ("world", "plan-metrics") and not judge.startswith("clip:"):
        raise MantaError(f"unknown judge {judge!r}; allowed: world, plan-metrics, clip:<local CLIP folder>")
    texts, source = _prompt_texts(prompts, coco, limit, seed)
    world = Path(world) if world is not None else shipped_world()
    if judge == "world":
        if not (world / "catalog.jsonl").is_file():
            raise MantaError(
                f"{world} is not a built tiny world (no catalog.jsonl); run `zaya manta world build {world}`"
            )
        catalog = catalog or str(world / "catalog.jsonl")
        hardware = hardware or WORLD_HARDWARE
        if texts is None:
            texts, source = world_prompts(limit or 24, seed), "tiny-world captions"
    elif texts is None:
        texts, source = shipped_prompts(), "manta's shipped prompts (data/prompts.txt)"
        texts = texts[:limit] if limit else texts
    composer, limits = _setup(
        catalog or "example", hardware or "desktop-24gb", batch, None, model_path, cache_dir, seed
    )
    opponents, controls = systems(composer)
    accuracy, seeds = None, None
    if judge == "plan-metrics":
        from manta.evaluation.judges import OfflineJudge
        from manta.evaluation.metrics import PlanEvaluator

        the_judge, name = OfflineJudge(PlanEvaluator(composer.index, composer.embedder, limits)), SMOKE_JUDGE
    else:
        from manta.evaluation.image_scorers import load_scorer

        scorer = load_scorer(judge, world)
        render = {**RENDER, "num_steps": steps} if judge == "world" else {"num_steps": steps}
        the_judge = image_judge(composer, scorer, render)
        if judge == "world":
            accuracy, seeds = judge_accuracy(scorer), world_seeds(world, seed)
        name = (
            WORLD_JUDGE if judge == "world" else f"images/{scorer.name} (CLIP alignment, embeddings, CLIP-IQA quality)"
        )
    return evaluate(
        texts,
        composer,
        the_judge,
        name,
        limits,
        opponents,
        controls,
        batch,
        seed,
        True,
        source,
        judge_accuracy=accuracy,
        world_seeds=seeds,
    )


world_app = typer.Typer(help="The tiny image world: build it from its seeded recipe, or check a built one.")
app.add_typer(world_app, name="world")


@world_app.command("build")
@reports(MantaError)
def world_build(
    out: Path = typer.Argument(..., help="Empty folder to write the world into"),
    quick: bool = typer.Option(False, "--quick", help="Smoke-size recipe (seconds; the models draw nothing useful)"),
    seed: int = typer.Option(0, "--seed"),
) -> None:
    """Train the tiny world (VAE, two checkpoints, LoRAs, judge), measure its costs, write its catalog."""
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    from manta.world.build import build_world
    from manta.world.judge_model import JudgeRecipe
    from manta.world.recipe import WorldRecipe

    recipe = WorldRecipe.quick(seed) if quick else WorldRecipe(seed=seed)
    judge = JudgeRecipe.quick() if quick else JudgeRecipe()
    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        TextColumn("{task.fields[loss]}"),
        TimeElapsedColumn(),
        console=console,
    ) as bar:
        tasks: dict[str, int] = {}

        def progress(name: str, step: int, total: int, loss: float) -> None:
            if name not in tasks:
                tasks[name] = bar.add_task(name, total=total, loss="")
            bar.update(tasks[name], completed=step, loss=f"loss {loss:.4f}")

        catalog = build_world(out, recipe, judge, progress, measure_costs=not quick)
    console.print(f"world written to {escape(str(out))}; catalog {escape(str(catalog))}")


@world_app.command("costs")
def world_costs(folder: Path = typer.Argument(..., help="A built world to measure on this machine")) -> None:
    """Measure a world's memory and per-step latency on this CPU and rewrite its catalog with them."""
    from manta.world.build import measure_costs

    if not (folder / "catalog.jsonl").is_file():
        fail(f"{folder} has no catalog.jsonl; it is not a built world")
    console.print(f"catalog rewritten with measured costs: {escape(str(measure_costs(folder)))}")


@world_app.command("verify")
def world_verify(folder: Path = typer.Argument(None, help="A built world (default: the shipped one)")) -> None:
    """Check every file of a world against the sha256 in its manifest."""
    from manta.world.build import shipped_world, verify_world

    folder = folder or shipped_world()
    if not (folder / "manifest.json").is_file():
        fail(f"{folder} has no manifest.json; it is not a built world")
    changed = verify_world(folder)
    if changed:
        fail(f"{len(changed)} file(s) differ from the manifest: {', '.join(changed[:10])}")
    console.print(f"{escape(str(folder))}: every file matches its manifest")
