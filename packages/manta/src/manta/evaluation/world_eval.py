"""The evaluation on the tiny world: manta vs Stylus (as published and under limits) and two controls,
judged on rendered images by the world's judge, which the composer never sees."""

from __future__ import annotations

from pathlib import Path

from manta.composer import Composer, build_composer, limits_from_config
from manta.config import MantaConfig
from manta.embedding import TextEmbedder
from manta.evaluation.controls import PromptBlindControl, RandomRelevantControl
from manta.evaluation.image_judge import ImageJudge
from manta.evaluation.image_scorers import ImageScorer, WorldScorer
from manta.evaluation.stylus import StylusBaseline
from manta.evaluation.suite import Evaluation, evaluate
from manta.generation import DiffusersBackend
from manta.world.vocabulary import evaluation_scenes

WORLD_HARDWARE = "tiny-cpu"
WORLD_JUDGE = "images/world-judge (CNN read of object, colour, texture, style and clean-vs-corrupted, trained on procedural drawings only)"
RENDER = {"num_steps": 20, "height": 32, "width": 32, "guidance_scale": 3.0}
CPU_BATCH = 16  # tiny-world images of one plan set-up per pipeline call on a CPU (16 cost what 5 single ones do)
# The judge renders with the plan's LoRAs fused for each call (the same images up to float rounding, faster);
# nothing here is timed: the latency budget is the catalog's, measured unfused.


def world_prompts(n: int, seed: int = 0) -> list[str]:
    """`n` world captions that each need an adapter or the pixel-art checkpoint."""
    return [s.caption() for s in evaluation_scenes(n, seed)]


def world_composer(world: Path, cache_dir: str | None, embedder: TextEmbedder | None = None) -> Composer:
    return build_composer(MantaConfig(catalog=str(Path(world) / "catalog.jsonl"), cache_dir=cache_dir), embedder)


def systems(composer: Composer) -> tuple[dict, dict]:
    """(opponents, controls) every evaluation runs."""
    opponents = {"stylus": StylusBaseline(composer), "stylus-limited": StylusBaseline(composer, enforce_limits=True)}
    controls = {"prompt-blind": PromptBlindControl(composer), "random-relevant": RandomRelevantControl(composer)}
    return opponents, controls


def image_judge(composer: Composer, scorer: ImageScorer, render: dict | None = None, device: str = "cpu") -> ImageJudge:
    cpu = device == "cpu"  # a CPU holds every tiny checkpoint at once and renders 16 tiny images per call
    keep, threads, max_batch = (len(composer.catalog.checkpoints), 1, CPU_BATCH) if cpu else (1, None, 1)
    backend = DiffusersBackend(
        composer.catalog,
        device=device,
        keep_loaded=keep,
        threads=threads,
        max_batch=max_batch,
        fuse=True,
        **(render or RENDER),
    )
    return ImageJudge(scorer, backend.render, backend.render_many)


def world_evaluation(
    world: Path,
    prompts: list[str] | None = None,
    n_prompts: int = 24,
    batch: int = 4,
    seed: int = 0,
    cache_dir: str | None = None,
    embedder: TextEmbedder | None = None,
    num_steps: int = 20,
    progress: bool = False,
) -> Evaluation:
    """The whole loop on the tiny world: compose, render, judge; every opponent and control."""
    world = Path(world)
    composer = world_composer(world, cache_dir, embedder)
    limits = limits_from_config(WORLD_HARDWARE)
    judge = image_judge(composer, WorldScorer(world / "judge"), {**RENDER, "num_steps": num_steps})
    texts = prompts or world_prompts(n_prompts, seed)
    opponents, controls = systems(composer)
    return evaluate(
        texts,
        composer,
        judge,
        WORLD_JUDGE,
        limits,
        opponents,
        controls,
        batch=batch,
        seed=seed,
        progress=progress,
        prompt_source="tiny-world captions (manta.world.vocabulary.evaluation_scenes)" if prompts is None else "given",
    )
