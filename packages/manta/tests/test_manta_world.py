"""The tiny world: its vocabulary and drawings, the seeded recipe (reproducible, at smoke size), the shipped
weights (intact, made by the default recipe), the judge reading drawings, and real LoRAs changing renders."""

import json
from dataclasses import asdict

import numpy as np
import pytest
from manta.world.build import build_world, shipped_world, verify_world
from manta.world.drawing import draw
from manta.world.judge_model import JudgeRecipe
from manta.world.recipe import WorldRecipe
from manta.world.vocabulary import OBJECTS, STYLES, TEXTURES, Scene, evaluation_scenes, read_prompt, sample_scenes


def test_every_caption_reads_back_as_its_scene():
    rng = np.random.default_rng(0)
    for scene in sample_scenes(rng, 200, OBJECTS, TEXTURES, STYLES):
        wanted = read_prompt(scene.caption())
        assert wanted["object"] == scene.object and wanted["colour"] == scene.colour
        assert wanted.get("texture", "plain") == scene.texture and wanted.get("style", "flat") == scene.style
    assert read_prompt("a photo of a dog") == {}


def test_evaluation_prompts_each_need_an_adapter_or_the_pixel_checkpoint():
    scenes = evaluation_scenes(40, seed=0)
    assert len({s.caption() for s in scenes}) == 40
    for s in scenes:
        assert s.object in ("star", "heart") or s.texture != "plain" or s.style != "flat"
        assert not (s.style == "line art" and s.texture != "plain")


def test_drawings_are_seeded_images_in_range():
    scene = Scene("star", "blue", "striped", "watercolor")
    a, b = draw(scene, np.random.default_rng(1)), draw(scene, np.random.default_rng(1))
    assert a.shape == (32, 32, 3) and a.dtype == np.float32 and a.min() >= 0 and a.max() <= 1
    assert np.array_equal(a, b)


@pytest.mark.slow
def test_the_recipe_is_reproducible(tmp_path):
    recipe, judge = WorldRecipe.quick(), JudgeRecipe.quick()
    first = build_world(tmp_path / "a", recipe, judge, measure_costs=False)
    second = build_world(tmp_path / "b", recipe, judge, measure_costs=False)
    hashes = [json.loads((c.parent / "manifest.json").read_text())["files"] for c in (first, second)]
    weights = {k: v for k, v in hashes[0].items() if k.endswith(".safetensors")}
    assert len(weights) == 2 * 3 + 2 + 1  # 2 checkpoints x (unet, vae, text encoder), 2 LoRAs, the judge
    assert hashes[0] == hashes[1]
    rows = [json.loads(line) for line in first.read_text().splitlines()]
    assert {r["id"] for r in rows} == {"tiny-flat", "tiny-pixel", "lora-star", "lora-watercolor"}
    assert all(not r["path"].startswith("/") for r in rows)  # relative to the catalog: the folder can move


def test_the_shipped_world_is_intact_and_was_made_by_the_default_recipe():
    world = shipped_world()
    assert verify_world(world) == []
    manifest = json.loads((world / "manifest.json").read_text())
    assert manifest["recipe"] == json.loads(json.dumps(asdict(WorldRecipe())))
    assert manifest["judge_recipe"] == asdict(JudgeRecipe())
    size = sum(p.stat().st_size for p in world.rglob("*") if p.is_file())
    assert size < 8 * 2**20, size


@pytest.mark.slow
@pytest.mark.parametrize(
    ("prompt", "adapters", "base"),
    [
        ("a red star", ["lora-star"], "tiny-flat"),
        ("a blue heart", ["lora-heart"], "tiny-flat"),
        ("a green square, watercolor", ["lora-watercolor"], "tiny-flat"),
        ("a blue square, pixel art", [], "tiny-pixel"),
    ],
)
def test_the_right_adapter_or_checkpoint_raises_the_judges_alignment(prompt, adapters, base, world_judge):
    """The world's LoRAs and second checkpoint draw what they were trained on, as the judge reads it."""
    from manta.composer import limits_from_config
    from manta.plan import plan_from_entries

    catalog, judge, scorer = world_judge
    limits = limits_from_config("tiny-cpu")
    right = plan_from_entries(prompt, catalog[base], [(catalog[a], "x", 1.0, 0.5) for a in adapters], (), limits)
    bare = plan_from_entries(prompt, catalog["tiny-flat"], [], (), limits)
    with_it = scorer.alignment(judge.images([right] * 4), prompt).mean()
    without = scorer.alignment(judge.images([bare] * 4), prompt).mean()
    assert with_it > without + 0.05, (with_it, without)


@pytest.fixture(scope="module")
def world_judge():
    from manta.catalog import load_catalog
    from manta.evaluation.image_judge import ImageJudge
    from manta.evaluation.image_scorers import WorldScorer
    from manta.evaluation.world_eval import RENDER
    from manta.generation import DiffusersBackend

    catalog = load_catalog("world")
    backend = DiffusersBackend(catalog, keep_loaded=2, threads=1, **RENDER)
    scorer = WorldScorer(shipped_world() / "judge")
    return catalog, ImageJudge(scorer, backend.render), scorer


def test_calibration_sets_the_ties_to_the_judges_seed_noise(world_judge):
    """Every margin becomes sigma x sqrt(2), sigma the spread of a batch's value (alignment, diversity, quality)
    when the same plans are rendered with other seeds: no fixed constant survives calibration."""
    import numpy as np
    from manta.composer import limits_from_config
    from manta.evaluation.image_judge import ImageJudge, noise_starts
    from manta.evaluation.judges import CRITERIA
    from manta.evaluation.world_eval import RENDER
    from manta.generation import DiffusersBackend
    from manta.plan import plan_from_entries

    catalog, _, scorer = world_judge
    limits = limits_from_config("tiny-cpu")
    cases = [(p, [plan_from_entries(p, catalog["tiny-flat"], [(catalog[a], "x", w, 0.5)], (), limits) for w in (1.0, 0.7)])
             for p, a in (("a red star", "lora-star"), ("a green square, watercolor", "lora-watercolor"))]  # fmt: skip
    backend = DiffusersBackend(catalog, keep_loaded=2, threads=1, max_batch=16, fuse=True, **{**RENDER, "num_steps": 4})
    fresh = ImageJudge(scorer, backend.render, backend.render_many)  # 4 steps, batched: the arithmetic is the point
    margins = fresh.calibrate(cases, seed_sets=3)
    variances = {c: [] for c in CRITERIA}
    for k, (prompt, plans) in enumerate(cases):
        values = [fresh.measure(prompt, plans, start) for start in noise_starts(k, plans, 3)]  # its renders
        for c in CRITERIA:
            variances[c].append(np.var([v[c] for v in values], ddof=1))
    for c, v in variances.items():
        sigma = float(np.sqrt(np.mean(v)))
        assert fresh.seed_noise[c] == pytest.approx(sigma, rel=1e-6) and sigma > 0
        assert margins[c] == pytest.approx(sigma * np.sqrt(2), rel=1e-6)
    with pytest.raises(ValueError, match="2 or more seed sets"):
        fresh.calibrate(cases, seed_sets=1)
