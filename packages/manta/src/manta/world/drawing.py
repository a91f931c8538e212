"""Procedural drawing of a Scene as a small RGB image (float32 in [0, 1], H x W x 3).

Shapes are masks on a pixel grid with a random centre and size; textures recolour part of the mask;
styles change the background, the edges and the fill: `flat` (filled, light grey ground), `watercolor`
(pastel wash with soft, blurred edges on warm paper), `line art` (a dark outline on white, no fill),
`pixel art` (an 8 x 8 sprite upscaled by nearest neighbour on a dark ground).
"""

from __future__ import annotations

import numpy as np
from scipy.ndimage import binary_erosion, gaussian_filter, zoom

from manta.world.vocabulary import COLOURS, Scene

IMAGE_SIZE = 32


def shape_mask(name: str, size: int, cx: float, cy: float, r: float) -> np.ndarray:
    """Boolean mask of one shape centred at (cx, cy) with radius r (pixel units)."""
    y, x = np.mgrid[0:size, 0:size].astype(np.float32) + 0.5
    dx, dy = (x - cx) / r, (y - cy) / r
    if name == "circle":
        return dx**2 + dy**2 <= 1.0
    if name == "square":
        return np.maximum(np.abs(dx), np.abs(dy)) <= 0.8
    if name == "triangle":
        return (dy <= 0.8) & (dy >= -0.9) & (np.abs(dx) <= (dy + 0.9) * 0.55)
    if name == "star":
        angle = np.arctan2(dy, dx) + np.pi / 2
        return np.hypot(dx, dy) <= 0.45 + 0.6 * np.abs(np.cos(2.5 * angle)) ** 3
    if name == "heart":
        hx, hy = dx * 1.15, -dy * 1.15 + 0.25
        return (hx**2 + hy**2 - 1) ** 3 - hx**2 * hy**3 <= 0
    raise ValueError(f"unknown object {name!r}")


def _texture(texture: str, size: int, phase: int) -> np.ndarray:
    """Where the texture darkens the fill (a boolean pattern), or all False for plain."""
    y, x = np.mgrid[0:size, 0:size]
    if texture == "striped":
        return ((x + y + phase) // 3) % 2 == 0
    if texture == "checkered":
        return ((x + phase) // 4 + (y + phase) // 4) % 2 == 0
    return np.zeros((size, size), dtype=bool)


def draw(scene: Scene, rng: np.random.Generator, size: int = IMAGE_SIZE) -> np.ndarray:
    """One image of `scene`, with random placement, size and noise from `rng`."""
    colour = np.array(COLOURS[scene.colour], dtype=np.float32)
    cx, cy = size / 2 + rng.uniform(-3, 3), size / 2 + rng.uniform(-3, 3)
    r = size * rng.uniform(0.26, 0.36)
    if scene.style == "pixel art":
        small = 8
        mask = shape_mask(scene.object, small, cx * small / size, cy * small / size, r * small / size)
        pattern = _texture(scene.texture, small, 0) if scene.texture != "plain" else np.zeros_like(mask)
        if scene.texture == "checkered":
            pattern = ((np.add.outer(np.arange(small), np.arange(small))) % 2) == 0
        if scene.texture == "striped":
            pattern = (np.arange(small)[None, :] + np.arange(small)[:, None]) % 3 == 0
        fill = np.where(pattern[..., None], colour * 0.45, colour)
        ground = np.array([0.12, 0.12, 0.25], dtype=np.float32)
        image = np.where(mask[..., None], fill, ground)
        image = np.repeat(np.repeat(image, size // small, axis=0), size // small, axis=1)
        return np.clip(image + rng.normal(0, 0.01, image.shape), 0, 1).astype(np.float32)
    mask = shape_mask(scene.object, size, cx, cy, r)
    pattern = _texture(scene.texture, size, int(rng.integers(0, 6)))
    if scene.style == "line art":
        edge = mask & ~binary_erosion(mask, iterations=2)
        ink = colour * 0.6
        image = np.where(edge[..., None], ink, np.float32(0.98))
        return np.clip(image + rng.normal(0, 0.01, image.shape), 0, 1).astype(np.float32)
    fill = np.where(pattern[..., None], colour * 0.45, colour)
    if scene.style == "watercolor":
        paper = np.array([0.96, 0.92, 0.82], dtype=np.float32)
        soft = gaussian_filter(mask.astype(np.float32), 1.6)[..., None]
        wash = 0.55 * fill + 0.45 * paper
        blotch = zoom(rng.normal(0, 0.06, (4, 4)), size / 4, order=1)[..., None]
        image = soft * (wash + blotch) + (1 - soft) * paper
    else:
        ground = np.float32(0.82)
        image = np.where(mask[..., None], fill, ground)
    return np.clip(image + rng.normal(0, 0.015, image.shape), 0, 1).astype(np.float32)


def draw_batch(scenes: list[Scene], rng: np.random.Generator, size: int = IMAGE_SIZE) -> np.ndarray:
    """Images of `scenes` stacked as N x 3 x H x W in [-1, 1] (the layout diffusers models take)."""
    images = np.stack([draw(s, rng, size) for s in scenes])
    return (images.transpose(0, 3, 1, 2) * 2 - 1).astype(np.float32)
