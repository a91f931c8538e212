"""The evaluation on the tiny world: manta vs Stylus (as published and under limits) and two controls,
judged on rendered images by the world's judge, which the composer never sees."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import numpy as np

from manta.composer import Composer, build_composer, limits_from_config
from manta.config import MantaConfig
from manta.embedding import TextEmbedder
from manta.evaluation.controls import PromptBlindControl, RandomRelevantControl
from manta.evaluation.image_judge import ImageJudge, RenderStore
from manta.evaluation.image_scorers import ImageScorer, WorldScorer
from manta.evaluation.stylus import StylusBaseline
from manta.evaluation.suite import AA_COMPOSE_SEED, AA_RENDER_SEED, Evaluation, Prepared, evaluate, prepare
from manta.generation import DiffusersBackend
from manta.world.vocabulary import evaluation_scenes

WORLD_HARDWARE = "tiny-cpu"
WORLD_JUDGE = "images/world-judge (CNN read of object, colour, texture, style and clean-vs-corrupted, trained on procedural drawings only)"
RENDER = {"num_steps": 20, "height": 32, "width": 32, "guidance_scale": 3.0}
CPU_BATCH = 64  # tiny-world images of one plan set-up per pipeline call on a CPU (16 cost what 5 single ones do)
ACCURACY_SEED, ACCURACY_IMAGES = 7_000, 500  # held-out labelled drawings the judge's accuracy is measured on
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


def render_namespace(world: Path, render: dict) -> str:
    """What a tiny-world render depends on besides its plan and seed: the models' files (the manifest's hashes),
    the render settings and the versions of torch, diffusers and peft (a `RenderStore`'s namespace)."""
    from importlib.metadata import version

    files = json.loads((Path(world) / "manifest.json").read_text())["files"]
    models = {k: v for k, v in files.items() if k.startswith(("checkpoints/", "loras/"))}
    versions = [version(name) for name in ("torch", "diffusers", "peft", "transformers")]
    what = [models, sorted(render.items()), versions, CPU_BATCH]
    return "world-" + hashlib.sha256(json.dumps(what, sort_keys=True).encode()).hexdigest()[:16]


def render_shards(requests: list, shards: int) -> list[list]:
    """`requests` ((plan, seed), ...) split into `shards` lists of whole plan set-ups (base, adapters, weights),
    balanced by image count, each in the order of `requests`: a backend batches a set-up's images the same way
    whether it renders one shard or all of them, so the images are the same to the bit."""
    groups: dict[tuple, list] = {}
    for plan, seed in requests:
        groups.setdefault((plan.base_id, tuple((a.id, a.weight) for a in plan.adapters)), []).append((plan, seed))
    loads, owner = [0] * shards, {}
    for setup in sorted(groups, key=lambda g: (-len(groups[g]), repr(g))):
        k = loads.index(min(loads))
        owner[setup], loads[k] = k, loads[k] + len(groups[setup])
    out: list[list] = [[] for _ in range(shards)]
    for plan, seed in requests:
        out[owner[(plan.base_id, tuple((a.id, a.weight) for a in plan.adapters))]].append((plan, seed))
    return out


def world_seeds(world: Path, seed: int) -> dict[str, int]:
    """The seeds of the world's recipe, of its judge's, and of this evaluation (prompts, A/A, calibration)."""
    from manta.evaluation.image_judge import NOISE_SEED

    manifest = json.loads((Path(world) / "manifest.json").read_text())
    return {
        "world_recipe": int(manifest["recipe"]["seed"]),
        "judge_recipe": int(manifest["judge_recipe"]["seed"]),
        "prompts": seed,
        "aa_compose_offset": AA_COMPOSE_SEED,
        "aa_render_seed": AA_RENDER_SEED,
        "calibration_render_seed": NOISE_SEED,
        "judge_accuracy_drawings": ACCURACY_SEED,
    }


def judge_accuracy(scorer: Any, n: int = ACCURACY_IMAGES, seed: int = ACCURACY_SEED) -> dict[str, Any]:
    """The world judge's accuracy per attribute on `n` labelled procedural drawings of a seed it was not trained
    on (drawings, not the models' renders: what the judge reads on a render is not labelled)."""
    from PIL import Image

    from manta.world.drawing import draw
    from manta.world.vocabulary import ATTRIBUTES, OBJECTS, STYLES, TEXTURES, Scene, sample_scenes

    rng = np.random.default_rng(seed)
    scenes = [
        Scene(s.object, s.colour, "plain", s.style) if s.style == "line art" else s
        for s in sample_scenes(rng, n, OBJECTS, TEXTURES, STYLES)
    ]
    images = [Image.fromarray((draw(s, rng) * 255).round().astype(np.uint8)) for s in scenes]
    seen = scorer.attributes(images)
    accuracy = {
        a: float(np.mean([got[a] == s.value(a) for got, s in zip(seen, scenes, strict=True)])) for a in ATTRIBUTES
    }
    return {
        "on": f"{n} labelled procedural drawings (seed {seed}, held out from the judge's training), not renders",
        **{a: round(v, 4) for a, v in accuracy.items()},
    }


def image_judge(
    composer: Composer,
    scorer: ImageScorer,
    render: dict | None = None,
    device: str = "cpu",
    store: RenderStore | None = None,
) -> ImageJudge:
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
    return ImageJudge(scorer, backend.render, backend.render_many, store=store)


def prepare_world(world: Path, n_prompts: int, batch: int, seed: int = 0, cache_dir=None, embedder=None) -> Prepared:
    """Every batch `world_evaluation` would compose for `n_prompts` world captions (no rendering)."""
    composer = world_composer(Path(world), cache_dir, embedder)
    opponents, controls = systems(composer)
    prompts = world_prompts(n_prompts, seed)
    return prepare(prompts, composer, limits_from_config(WORLD_HARDWARE), opponents, controls, batch, seed)


def world_judge(
    world: Path, num_steps: int = 20, render_store: str | Path | None = None, cache_dir=None, embedder=None
):
    """The world's image judge (its scorer, a CPU backend, a `RenderStore` in `render_store` if given)."""
    world = Path(world)
    composer = world_composer(world, cache_dir, embedder)
    render = {**RENDER, "num_steps": num_steps}
    store = RenderStore(render_store, render_namespace(world, render)) if render_store is not None else None
    return image_judge(composer, WorldScorer(world / "judge"), render, store=store)


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
    render_store: str | Path | None = None,
    prepared: Prepared | None = None,
) -> Evaluation:
    """The whole loop on the tiny world: compose, render, judge; every opponent and control, and the A/A run.
    With `render_store` (a folder) renders are kept and reused by content (`RenderStore`, `render_namespace`)."""
    world = Path(world)
    composer = world_composer(world, cache_dir, embedder)
    limits = limits_from_config(WORLD_HARDWARE)
    render = {**RENDER, "num_steps": num_steps}
    store = RenderStore(render_store, render_namespace(world, render)) if render_store is not None else None
    scorer = WorldScorer(world / "judge")
    judge = image_judge(composer, scorer, render, store=store)
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
        judge_accuracy=judge_accuracy(scorer),
        world_seeds=world_seeds(world, seed),
        prepared=prepared,
    )
