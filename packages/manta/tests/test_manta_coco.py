"""Real prompts: the COCO 2014 validation captions shipped with manta, and how much of them the composer serves."""

import json

import pytest
from manta.catalog import load_catalog
from manta.composer import Composer, build_index, limits_from_config
from manta.config import MantaConfig
from manta.errors import MantaError
from manta.evaluation.prompts import load_coco_captions, shipped_coco_path
from manta.evaluation.suite import coverage_of


def test_shipped_coco_captions_carry_their_attribution_and_cover_200_images():
    data = json.loads(shipped_coco_path().read_text(encoding="utf-8"))
    info = data["info"]
    assert "CC BY 4.0" in info["license"] and "COCO" in info["attribution"] and "val2014" in info["dataset"]
    images = {a["image_id"] for a in data["annotations"]}
    assert len(images) >= 200 and len(data["annotations"]) == info["captions"]
    captions = load_coco_captions("shipped", limit=200, seed=0)
    assert len(set(captions)) == 200
    assert load_coco_captions("shipped", limit=200, seed=0) == captions  # seeded
    first = next(a["caption"] for a in data["annotations"] if a["image_id"] == 400)
    assert first in load_coco_captions("shipped")  # one caption per image: the image's first
    with pytest.raises(MantaError, match="does not exist"):
        load_coco_captions("no/such/captions.json")


def test_the_composer_serves_coco_captions_with_the_everyday_catalog(embedder, cache_dir):
    composer = Composer(build_index(load_catalog("everyday"), embedder, cache_dir), embedder, MantaConfig())
    captions = load_coco_captions("shipped", limit=40, seed=0)
    coverage, adapters = coverage_of(composer, captions, limits_from_config("desktop-24gb"), batch=1)
    assert coverage >= 0.4 and adapters >= 1.0, (coverage, adapters)
