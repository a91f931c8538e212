"""Build the tiny world into a folder: models (recipe), judge, measured costs, catalog, manifest.

Layout: `checkpoints/<id>/` (diffusers pipelines), `loras/<name>/pytorch_lora_weights.safetensors`,
`judge/` (the image judge), `catalog.jsonl` (paths relative to the folder), `manifest.json` (recipes,
library versions, and the sha256 of every file, so a rebuilt world can be compared with the shipped one).
The shipped world is `manta.world.build.shipped_world()`; `zaya manta world build OUT` rebuilds it.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict
from importlib.resources import files
from pathlib import Path

from manta.errors import MantaError
from manta.world.judge_model import JudgeRecipe, save_judge, train_judge
from manta.world.recipe import WorldRecipe, build_world_models

# What the composer reads about each model: a description and tags (it never sees the judge).
DESCRIPTIONS: dict[str, tuple[str, tuple[str, ...]]] = {
    "tiny-flat": (
        "Tiny world base checkpoint: flat, solid coloured simple shapes (circle, square, triangle) on a plain "
        "light grey background",
        ("flat", "simple shapes", "solid colour", "plain"),
    ),
    "tiny-pixel": (
        "Tiny world pixel art checkpoint: blocky 8-bit retro sprites on a dark background",
        ("pixel art", "8-bit", "retro", "sprite"),
    ),
    "lora-star": ("Star shape adapter: draws five-pointed stars", ("star", "five-pointed star")),
    "lora-heart": ("Heart shape adapter: draws hearts, the love symbol", ("heart", "love heart")),
    "lora-stripes": ("Stripes texture adapter: fills shapes with diagonal stripes", ("stripes", "striped pattern")),
    "lora-checks": (
        "Checkered texture adapter: fills shapes with a checkerboard pattern",
        ("checkered pattern", "checkerboard", "checks"),
    ),
    "lora-watercolor": (
        "Watercolor painting style adapter: soft pastel washes with blurred edges on warm paper",
        ("watercolor", "watercolour painting", "wash"),
    ),
    "lora-line-art": (
        "Line art style adapter: thin ink outlines on white paper, no fill",
        ("line art", "outline", "ink drawing"),
    ),
}
WORLD_FAMILY = "tiny"


def shipped_world() -> Path:
    """The world built by the default recipe and shipped inside the package."""
    return Path(str(files("manta.data").joinpath("world")))


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def file_hashes(folder: Path) -> dict[str, str]:
    """sha256 of every weight and config file under `folder` (relative paths), the manifest excluded."""
    return {
        str(p.relative_to(folder)): sha256(p)
        for p in sorted(folder.rglob("*"))
        if p.is_file() and p.name != "manifest.json"
    }


def catalog_rows(paths: dict[str, Path], costs: dict[str, dict[str, float]], folder: Path, rank: int) -> list[dict]:
    rows = []
    for model_id, path in paths.items():
        description, tags = DESCRIPTIONS[model_id]
        cost = costs[model_id]
        row = {
            "id": model_id,
            "kind": "lora" if model_id.startswith("lora-") else "checkpoint",
            "base_family": WORLD_FAMILY,
            "description": description,
            "tags": list(tags),
            "vram_bytes": int(cost["vram_bytes"]),
            "size_bytes": int(cost["size_bytes"]),
            "step_latency_ms": round(float(cost["step_latency_ms"]), 3),
            "licence": "apache-2.0",
            "path": str(path.relative_to(folder)),
        }
        if row["kind"] == "lora":
            row["rank"] = rank
        rows.append(row)
    return rows


def build_world(
    folder: str | Path,
    recipe: WorldRecipe | None = None,
    judge: JudgeRecipe | None = None,
    progress=None,
    measure_costs: bool = True,
) -> Path:
    """Train everything and write the world; returns the catalog path."""
    import diffusers
    import peft
    import torch
    from zaya_config.atomic import write_text_atomic

    from manta.world.costs import measure_world_costs

    folder = Path(folder)
    if (folder / "manifest.json").exists():
        raise MantaError(f"{folder} already holds a world (manifest.json); pick an empty folder")
    recipe, judge = recipe or WorldRecipe(), judge or JudgeRecipe()
    paths = build_world_models(recipe, folder, progress)
    threads = torch.get_num_threads()
    torch.set_num_threads(recipe.threads)
    try:
        save_judge(train_judge(judge, progress), judge, folder / "judge")
    finally:
        torch.set_num_threads(threads)
    if measure_costs:
        costs = measure_world_costs(paths)
    else:
        costs = {k: {"vram_bytes": 0, "step_latency_ms": 0.0, "size_bytes": 0} for k in paths}
    rows = catalog_rows(paths, costs, folder, recipe.lora_rank)
    write_text_atomic(folder / "catalog.jsonl", "".join(json.dumps(r) + "\n" for r in rows))
    manifest = {
        "recipe": asdict(recipe),
        "judge_recipe": asdict(judge),
        "versions": {"torch": torch.__version__, "diffusers": diffusers.__version__, "peft": peft.__version__},
        "costs_measured_on": "this CPU, one thread" if measure_costs else "not measured",
        "files": file_hashes(folder),
    }
    write_text_atomic(folder / "manifest.json", json.dumps(manifest, indent=1))
    return folder / "catalog.jsonl"


def measure_costs(folder: str | Path) -> Path:
    """Measure a built world's costs on this machine and rewrite its catalog (and the manifest's hashes)."""
    from zaya_config.atomic import write_text_atomic

    from manta.world.costs import measure_world_costs

    folder = Path(folder)
    rows = [json.loads(line) for line in (folder / "catalog.jsonl").read_text().splitlines() if line.strip()]
    costs = measure_world_costs({r["id"]: folder / r["path"] for r in rows})
    for row in rows:
        cost = costs[row["id"]]
        row["vram_bytes"], row["size_bytes"] = int(cost["vram_bytes"]), int(cost["size_bytes"])
        row["step_latency_ms"] = round(float(cost["step_latency_ms"]), 3)
    write_text_atomic(folder / "catalog.jsonl", "".join(json.dumps(r) + "\n" for r in rows))
    manifest = json.loads((folder / "manifest.json").read_text())
    manifest["costs_measured_on"] = "this CPU, one thread"
    manifest["files"] = file_hashes(folder)
    write_text_atomic(folder / "manifest.json", json.dumps(manifest, indent=1))
    return folder / "catalog.jsonl"


def verify_world(folder: str | Path) -> list[str]:
    """Files whose sha256 differs from the manifest's (empty when the world is intact)."""
    folder = Path(folder)
    manifest = json.loads((folder / "manifest.json").read_text())
    now = file_hashes(folder)
    return sorted(k for k in set(manifest["files"]) | set(now) if manifest["files"].get(k) != now.get(k))
