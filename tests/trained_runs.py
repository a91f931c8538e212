"""Trained tiny run dirs for tests, cached with `artifact_cache`: the key of everything a run depends on, and
the build that makes a run dir's records name the folder it ends up in."""

from __future__ import annotations

from pathlib import Path

from artifact_cache import REPO


def run_dir_key(*inputs) -> str:
    """Content hash of everything a trained run dir depends on: the sources of the packages that train it
    (zaya-config, zaya-model, zaya-train), the stdlib packages it trains on (json, email), the Python and
    torch versions, and `inputs` (the builder's own source and its settings)."""
    import email
    import json
    import platform

    import numpy
    import torch
    from artifact_cache import content_hash

    packages = REPO / "packages"
    return content_hash(
        *(packages / name / "src" for name in ("zaya-config", "zaya-model", "zaya-train")),
        Path(json.__file__).parent,
        Path(email.__file__).parent,
        f"python {platform.python_version()} torch {torch.__version__} numpy {numpy.__version__}",
        *inputs,
    )


def relocate_run(built: Path, final: Path) -> None:
    """A run dir built in `cached_artifact`'s temporary folder names that folder in its text records
    (config.yaml's data cache_dir, summary.json, events.jsonl); point them at the folder it is renamed to."""
    for path in built.rglob("*"):
        if path.is_file() and path.suffix in (".yaml", ".json", ".jsonl"):
            text = path.read_text()
            if str(built) in text:
                path.write_text(text.replace(str(built), str(final)))


def cached_run(kind: str, key: str, build) -> Path:
    """`cached_artifact(kind, key, build)` for a run dir that records its own absolute paths: `build(folder)`
    trains into `folder`, then its records name the final folder (see `relocate_run`)."""
    from artifact_cache import cache_root, cached_artifact

    final = cache_root() / f"{kind}-{key}"

    def build_relocated(folder: Path) -> None:
        build(folder)
        relocate_run(folder, final)

    return cached_artifact(kind, key, build_relocated)
