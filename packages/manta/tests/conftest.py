"""Shared fixtures: the embedding model is loaded once per test session; catalogs stay small."""

import json
from pathlib import Path

import numpy as np
import pytest
from manta.catalog import Catalog, CatalogEntry, load_catalog
from manta.composer import Composer, build_index
from manta.config import MantaConfig
from manta.embedding import TextEmbedder
from manta.index import CatalogIndex


@pytest.fixture(scope="session")
def embedder() -> TextEmbedder:
    return TextEmbedder()


@pytest.fixture(scope="session")
def cache_dir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("manta-cache")


@pytest.fixture(scope="session")
def example_index(embedder, cache_dir) -> CatalogIndex:
    return build_index(load_catalog("example"), embedder, cache_dir)


@pytest.fixture(scope="session")
def composer(example_index, embedder) -> Composer:
    return Composer(example_index, embedder, MantaConfig())


def _unit_rows(rng: np.random.Generator, n: int, dim: int) -> np.ndarray:
    rows = rng.normal(size=(n, dim)).astype(np.float32)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def _write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _toy_catalog(rng: np.random.Generator, n_adapters: int = 12, families=("fa", "fb")) -> Catalog:
    """Two bases per family and random adapters with random costs (for solver tests without a model)."""
    entries = []
    for family in families:
        for i in range(2):
            entries.append(
                CatalogEntry(
                    id=f"{family}-base{i}",
                    kind="checkpoint",
                    base_family=family,
                    description=f"base {i}",
                    vram_bytes=int(rng.integers(2, 6) * 1e9),
                    step_latency_ms=float(rng.uniform(20, 60)),
                    price_per_image=float(rng.choice([0.0, 0.01])),
                    quality=0.6,
                )
            )
    for i in range(n_adapters):
        entries.append(
            CatalogEntry(
                id=f"lora{i}",
                kind="lora",
                base_family=families[i % len(families)],
                description=f"adapter {i}",
                rank=8,
                vram_bytes=int(rng.integers(1, 8) * 2e8),
                step_latency_ms=float(rng.uniform(1, 8)),
                price_per_image=float(rng.choice([0.0, 0.0, 0.005])),
                quality=0.6,
            )
        )
    return Catalog(tuple(entries), source="<toy>")


@pytest.fixture
def write_jsonl():
    """write_jsonl(path, rows) -> path."""
    return _write_jsonl


@pytest.fixture
def unit_rows():
    """unit_rows(rng, n, dim) -> n random unit vectors."""
    return _unit_rows


@pytest.fixture
def toy_catalog():
    """toy_catalog(rng, n_adapters, families) -> a small Catalog with random costs."""
    return _toy_catalog
