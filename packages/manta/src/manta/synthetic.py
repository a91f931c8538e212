"""Large synthetic catalogs (e.g. 75k adapters, the size of StylusDocs) for benchmarks and scale tests.

Records are drawn, seeded, from a vocabulary of subjects, styles and settings over four base families
with plausible costs (LoRA size grows with rank and base size; latency per step with both), so that
retrieval, the solver and the limits see the same shape of data a real adapter hub has.
"""

from __future__ import annotations

import numpy as np

from manta.catalog import Catalog, CatalogEntry

SUBJECTS = (
    "cat",
    "kitten",
    "dog",
    "puppy",
    "horse",
    "fox",
    "wolf",
    "owl",
    "eagle",
    "parrot",
    "koi fish",
    "tiger",
    "lion",
    "bear",
    "rabbit",
    "deer",
    "dragon",
    "phoenix",
    "unicorn",
    "griffin",
    "robot",
    "mecha",
    "android",
    "cyborg",
    "astronaut",
    "samurai",
    "knight",
    "wizard",
    "witch",
    "elf",
    "pirate",
    "ninja",
    "viking",
    "cowboy",
    "princess",
    "old man",
    "young woman",
    "child",
    "chef",
    "soldier",
    "dancer",
    "castle",
    "cathedral",
    "lighthouse",
    "temple",
    "skyscraper",
    "cottage",
    "bridge",
    "windmill",
    "spaceship",
    "sports car",
    "motorcycle",
    "steam train",
    "sailing ship",
    "airship",
    "tank",
    "bicycle",
    "sushi",
    "ramen",
    "cake",
    "coffee",
    "burger",
    "pizza",
    "fruit",
    "flowers",
    "roses",
    "sunflowers",
    "cherry blossoms",
    "mushrooms",
    "cactus",
    "bonsai",
    "top hat",
    "wizard hat",
    "armour",
    "kimono",
    "wedding dress",
    "sneakers",
    "jewellery",
    "sword",
    "guitar",
    "book",
    "clock",
    "teapot",
    "lantern",
    "crown",
    "mask",
    "skull",
    "butterfly",
    "jellyfish",
    "octopus",
    "whale",
    "shark",
    "dinosaur",
)
STYLES = (
    "watercolor",
    "oil painting",
    "pixel art",
    "anime",
    "manga",
    "ukiyo-e",
    "pencil sketch",
    "line art",
    "charcoal drawing",
    "pastel",
    "gouache",
    "ink wash",
    "cyberpunk",
    "steampunk",
    "art nouveau",
    "art deco",
    "impressionist",
    "cubist",
    "pop art",
    "comic book",
    "cel shading",
    "low poly",
    "3d render",
    "claymation",
    "papercraft",
    "stained glass",
    "mosaic",
    "graffiti",
    "vaporwave",
    "synthwave",
    "gothic",
    "baroque",
    "photorealistic",
    "cinematic",
    "film noir",
    "vintage film",
    "polaroid",
    "long exposure",
    "macro photography",
    "studio photography",
    "fashion photography",
    "food photography",
    "isometric",
    "concept art",
    "children's book",
    "fantasy illustration",
    "dark fantasy",
    "minimalist",
    "psychedelic",
    "origami",
)
SETTINGS = (
    "forest",
    "enchanted forest",
    "jungle",
    "desert",
    "snowy mountains",
    "glacier",
    "beach",
    "coral reef",
    "underwater",
    "deep ocean",
    "outer space",
    "nebula",
    "alien planet",
    "moon surface",
    "city at night",
    "neon city",
    "rainy street",
    "medieval village",
    "ancient ruins",
    "castle courtyard",
    "cozy interior",
    "library",
    "kitchen",
    "cafe",
    "market",
    "train station",
    "battlefield",
    "volcano",
    "swamp",
    "meadow",
    "flower field",
    "autumn park",
    "winter village",
    "sunset sky",
    "stormy sea",
    "cave",
    "dungeon",
    "throne room",
    "laboratory",
    "space station",
    "subway",
    "rooftop",
    "harbor",
    "temple garden",
    "savanna",
    "canyon",
    "waterfall",
    "island",
    "cloud kingdom",
    "haunted house",
)
DETAILS = (
    "detail enhancer",
    "lighting",
    "sharpness",
    "skin texture",
    "hands fix",
    "color grading",
    "bokeh",
    "volumetric fog",
    "rim light",
    "high contrast",
)
TEMPLATES = (
    "{a} LoRA: {b} with {c}",
    "Adds {a} to images; trained on {b} pictures, good at {c}",
    "{b} {a}, consistent look, {c}",
    "High quality {a} in a {b} mood with {c}",
    "Fine-tuned adapter for {a}; pairs well with {b} and {c}",
)
# family: (checkpoint vram bytes, checkpoint step ms, bytes per LoRA rank, LoRA ms per sqrt(rank), ms fixed)
FAMILIES = {
    "sd15": (3.6e9, 38.0, 2.3e6, 0.04, 0.6),
    "sdxl": (9.5e9, 145.0, 5.8e6, 0.09, 1.8),
    "sd3": (14.0e9, 210.0, 7.5e6, 0.12, 2.4),
    "flux": (24.0e9, 420.0, 11.0e6, 0.2, 4.0),
}
CHECKPOINT_DOMAINS = (
    "general purpose",
    "photorealistic",
    "anime and illustration",
    "painterly art",
    "3d and product render",
    "fantasy and concept art",
    "portrait photography",
    "architecture and interiors",
    "cartoon and comic",
    "cinematic film stills",
)
LICENCES = ("creativeml-openrail-m", "openrail++", "cc-by-4.0", "cc-by-nc-4.0", "commercial")


def synthetic_entries(n_adapters: int, checkpoints_per_family: int = 10, seed: int = 0) -> list[CatalogEntry]:
    """`checkpoints_per_family` x 4 checkpoints, then `n_adapters` adapters, deterministic for a seed."""
    rng = np.random.default_rng(seed)
    entries = []
    for family, (vram, step_ms, _, _, _) in FAMILIES.items():
        for i in range(checkpoints_per_family):
            domain = CHECKPOINT_DOMAINS[i % len(CHECKPOINT_DOMAINS)]
            entries.append(
                CatalogEntry(
                    id=f"{family}-ckpt-{i:02d}",
                    kind="checkpoint",
                    base_family=family,
                    description=f"{family.upper()} checkpoint for {domain} images",
                    size_bytes=int(vram * 0.6),
                    vram_bytes=int(vram * rng.uniform(0.95, 1.1)),
                    step_latency_ms=round(step_ms * rng.uniform(0.9, 1.2), 2),
                    price_per_image=float(rng.choice([0.0, 0.0, 0.0, 0.002, 0.005])),
                    licence=str(rng.choice(LICENCES)),
                    tags=tuple(domain.split(" and ")),
                    quality=round(float(rng.uniform(0.45, 0.85)), 3),
                )
            )
    families = list(FAMILIES)
    pools = (SUBJECTS, STYLES, SETTINGS, DETAILS)
    # Every random draw is made up front, vectorised: generating 75k records stays well under a second or two.
    n = n_adapters
    family_i = rng.choice(len(families), size=n, p=[0.45, 0.35, 0.1, 0.1])
    kind_i = rng.choice(len(pools), size=n, p=[0.5, 0.3, 0.17, 0.03])
    focus_u, style_i, other_u = rng.random(n), rng.integers(len(STYLES), size=n), rng.random(n)
    template_i = rng.integers(len(TEMPLATES), size=n)
    rank_v = rng.choice(np.array([4, 8, 16, 32, 64, 128]), size=n, p=[0.1, 0.2, 0.3, 0.25, 0.1, 0.05])
    size_f, lo_v = rng.uniform(0.8, 1.2, size=n), np.round(rng.uniform(0.2, 0.5, size=n), 2)
    paid = rng.random(n) < 0.1
    licence_i = rng.integers(len(LICENCES), size=n)
    quality_v = np.round(np.clip(rng.normal(0.6, 0.12, size=n), 0.05, 0.98), 3)
    for i in range(n):
        family = families[family_i[i]]
        _, _, per_rank, ms_rank, ms_fixed = FAMILIES[family]
        kind = int(kind_i[i])
        pool = pools[kind]
        focus = pool[int(focus_u[i] * len(pool))]
        others = SETTINGS if kind != 2 else SUBJECTS
        b, c = STYLES[style_i[i]], others[int(other_u[i] * len(others))]
        rank = int(rank_v[i])
        size = int(rank * per_rank * size_f[i])
        lo = float(lo_v[i])
        entries.append(
            CatalogEntry(
                id=f"lora-{i:06d}",
                kind="lora",
                base_family=family,
                description=TEMPLATES[template_i[i]].format(a=focus, b=b, c=c),
                rank=rank,
                size_bytes=size,
                vram_bytes=int(size * 1.15),
                step_latency_ms=round(ms_fixed + ms_rank * rank**0.5, 3),
                price_per_image=0.001 if paid[i] else 0.0,
                licence=LICENCES[licence_i[i]],
                tags=(focus, b),
                trigger_words=(f"trg{i}",),
                weight_min=lo,
                weight_max=round(lo + 0.5, 2),
                quality=float(quality_v[i]),
            )
        )
    return entries


def synthetic_catalog(n_adapters: int, checkpoints_per_family: int = 10, seed: int = 0) -> Catalog:
    """A validated synthetic catalog."""
    return Catalog(
        tuple(synthetic_entries(n_adapters, checkpoints_per_family, seed)),
        source=f"<synthetic n={n_adapters} seed={seed}>",
    )
