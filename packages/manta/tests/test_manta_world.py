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
