"""What the tiny world contains: objects, colours, textures and styles, how captions say them, and how a
prompt is read back into those attributes (the judge's own reader: exact world words, no embeddings).

The base checkpoint knows the BASE_OBJECTS in the `flat` style without texture; everything else (star and
heart, stripes and checks, watercolor and line art) is only reachable through a LoRA, and `pixel art` through
the second checkpoint. So a prompt that names them needs the right adapters to be drawn at all.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

BASE_OBJECTS = ("circle", "square", "triangle")
LORA_OBJECTS = ("star", "heart")
OBJECTS = BASE_OBJECTS + LORA_OBJECTS
COLOURS = {
    "red": (0.85, 0.12, 0.10),
    "green": (0.10, 0.70, 0.20),
    "blue": (0.12, 0.25, 0.90),
    "yellow": (0.95, 0.85, 0.10),
    "purple": (0.60, 0.15, 0.75),
}
TEXTURES = ("plain", "striped", "checkered")
STYLES = ("flat", "watercolor", "line art", "pixel art")
# How a caption says a texture or a style (plain / flat are the defaults and left unsaid).
TEXTURE_WORDS = {"plain": "", "striped": "with stripes", "checkered": "with a checkered pattern"}
STYLE_WORDS = {"flat": "", "watercolor": "watercolor", "line art": "line art", "pixel art": "pixel art"}
ATTRIBUTES = ("object", "colour", "texture", "style")


@dataclass(frozen=True)
class Scene:
    """One image of the world: what is drawn and how."""

    object: str
    colour: str
    texture: str = "plain"
    style: str = "flat"

    def caption(self) -> str:
        """`a red star with stripes, watercolor`: the words the model is trained on and prompted with."""
        text = f"a {self.colour} {self.object}"
        if TEXTURE_WORDS[self.texture]:
            text += " " + TEXTURE_WORDS[self.texture]
        if STYLE_WORDS[self.style]:
            text += ", " + STYLE_WORDS[self.style]
        return text

    def value(self, attribute: str) -> str:
        return getattr(self, attribute)


def read_prompt(prompt: str) -> dict[str, str]:
    """The world attributes a prompt asks for (object, colour, texture, style), by exact words.

    Attributes the prompt does not name are left out: an unnamed texture or style is not judged.
    """
    text = " " + re.sub(r"[^a-z ]", " ", prompt.lower()) + " "
    wanted: dict[str, str] = {}
    for name in OBJECTS:
        if f" {name} " in text or f" {name}s " in text:
            wanted["object"] = name
    for name in COLOURS:
        if f" {name} " in text:
            wanted["colour"] = name
    if " stripes " in text or " striped " in text:
        wanted["texture"] = "striped"
    elif " checkered " in text or " checks " in text:
        wanted["texture"] = "checkered"
    for name in ("watercolor", "line art", "pixel art"):
        if f" {name} " in text:
            wanted["style"] = name
    return wanted


def sample_scenes(
    rng: np.random.Generator,
    n: int,
    objects: tuple[str, ...] = BASE_OBJECTS,
    textures: tuple[str, ...] = ("plain",),
    styles: tuple[str, ...] = ("flat",),
) -> list[Scene]:
    """`n` random scenes with attributes drawn uniformly from the given sets."""
    colours = tuple(COLOURS)
    return [
        Scene(
            str(objects[rng.integers(len(objects))]),
            str(colours[rng.integers(len(colours))]),
            str(textures[rng.integers(len(textures))]),
            str(styles[rng.integers(len(styles))]),
        )
        for _ in range(n)
    ]


def evaluation_scenes(n: int, seed: int = 0) -> list[Scene]:
    """Prompts for evaluation: each asks for at least one thing only an adapter or the second checkpoint draws.

    Line art is drawn as an outline, so it is never asked together with a texture.
    """
    rng = np.random.default_rng(seed)
    scenes: list[Scene] = []
    while len(scenes) < n:
        scene = sample_scenes(rng, 1, OBJECTS, TEXTURES, STYLES)[0]
        if scene.style == "line art" and scene.texture != "plain":
            continue
        if scene.object in BASE_OBJECTS and scene.texture == "plain" and scene.style == "flat":
            continue
        if scene.caption() not in {s.caption() for s in scenes}:
            scenes.append(scene)
    return scenes
