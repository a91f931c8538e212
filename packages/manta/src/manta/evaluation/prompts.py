"""Evaluation prompts: the set written for manta, and captions from a local COCO captions JSON."""

from __future__ import annotations

import json
from importlib.resources import files
from pathlib import Path

import numpy as np

from manta.errors import MantaError


def shipped_prompts() -> list[str]:
    """The prompts shipped with manta (several concepts each: subject, style, setting)."""
    text = files("manta.data").joinpath("prompts.txt").read_text(encoding="utf-8")
    return [line.strip() for line in text.splitlines() if line.strip() and not line.startswith("#")]


def everyday_prompts() -> list[str]:
    """80 everyday-scene captions written for manta in the style of COCO captions (not from COCO)."""
    text = files("manta.data").joinpath("everyday_prompts.txt").read_text(encoding="utf-8")
    return [line.strip() for line in text.splitlines() if line.strip() and not line.startswith("#")]


SHIPPED_COCO = "shipped"


def shipped_coco_path() -> Path:
    """5,005 reference captions of 1,000 COCO 2014 validation images (CC BY 4.0; attribution in its 'info')."""
    return Path(str(files("manta.data").joinpath("coco_val2014_captions.json")))


def load_coco_captions(path: str | Path, limit: int | None = None, seed: int = 0) -> list[str]:
    """One caption per image from a COCO `captions_*.json` (first caption by annotation id, else by file
    order), seeded sample; `shipped` = the COCO val2014 captions shipped with manta."""
    path = shipped_coco_path() if str(path) == SHIPPED_COCO else Path(path)
    if not path.is_file():
        raise MantaError(f"COCO captions file {path} does not exist; pass e.g. annotations/captions_val2014.json")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        annotations = data["annotations"]
    except (json.JSONDecodeError, KeyError, TypeError) as err:
        raise MantaError(f"{path} is not a COCO captions file (need an 'annotations' list): {err}") from None
    first: dict[int, tuple[int, str]] = {}
    for i, ann in enumerate(annotations):
        try:
            image, caption = int(ann["image_id"]), str(ann["caption"]).strip()
        except (KeyError, TypeError, ValueError):
            raise MantaError(f"{path}: annotation {i} lacks image_id or caption") from None
        key = int(ann.get("id", i))
        if caption and (image not in first or key < first[image][0]):
            first[image] = (key, caption)
    captions = [first[image][1] for image in sorted(first)]
    if limit is not None and limit < len(captions):
        picked = np.sort(np.random.default_rng(seed).choice(len(captions), size=limit, replace=False))
        captions = [captions[i] for i in picked]
    return captions
