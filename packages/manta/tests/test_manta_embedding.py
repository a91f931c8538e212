"""The local embedding model, the on-disk cache of catalog embeddings, and the index's search."""

import json

import numpy as np
import pytest
from manta.catalog import Catalog, load_catalog
from manta.embedding import TextEmbedder, cache_path, catalog_embeddings, default_model_path
from manta.errors import MantaError
from manta.index import CatalogIndex
from manta.text_encoder import supports


def test_default_model_is_the_bundled_minilm():
    path = default_model_path()
    assert (path / "model.safetensors").is_file() and (path / "modules.json").is_file()


def test_missing_model_path_is_a_clear_error(tmp_path):
    with pytest.raises(MantaError, match=r"embedding model path .*missing.* is not a sentence-transformers folder"):
        TextEmbedder(tmp_path / "missing")


def test_embeddings_are_unit_norm_and_semantic(embedder):
    vectors = embedder.embed(["a photo of a cat", "a kitten sleeping", "a diesel truck engine"])
    assert vectors.shape == (3, embedder.dim) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert vectors[0] @ vectors[1] > vectors[0] @ vectors[2] + 0.2


def test_while_remembering_a_small_batch_is_embedded_once_and_handed_out_as_copies(embedder):
    fresh = TextEmbedder(embedder.path)  # its own remembered batches (the loaded model is shared)
    texts, many = ["a red star", "star"], [f"text {i}" for i in range(40)]
    assert fresh._small is None and np.array_equal(fresh.embed(texts), fresh._embed(texts, progress=False))
    with fresh.remembering():
        first = fresh.embed(texts)
        first[:] = 0  # a copy: what the embedder remembers is untouched
        with fresh.remembering():  # nested: the same memory
            assert np.array_equal(fresh.embed(texts), fresh._embed(texts, progress=False))
        assert np.array_equal(fresh.embed(many), fresh._embed(many, progress=False))  # catalog-sized: not kept
        assert list(fresh._small) == [tuple(texts)]
    assert fresh._small is None  # forgotten: timed compositions outside embed every time


def test_numpy_bert_gives_sentence_transformers_embeddings(embedder):
    """The numpy encoder that every process uses for the default model matches sentence-transformers itself."""
    texts = [e.embedding_text() for e in load_catalog("everyday").entries][:24]
    texts += ["a photo of a cat", "  spaces around  ", "", "Ünïcödé café, 東京 🐱", "A,B;C" * 30]
    truncated = ["a watercolor " * 200, "a cat"]  # past the 256-token limit, and padded next to it
    reference = TextEmbedder(embedder.path, sentence_transformers=True)
    assert embedder._numpy is not None and reference._model is not None
    for batch in (texts, truncated):
        assert np.allclose(embedder.embed(batch), reference.embed(batch), atol=2e-6, rtol=0)


def test_other_folder_shapes_are_left_to_sentence_transformers(tmp_path):
    source = default_model_path()
    for name in ("config.json", "modules.json", "tokenizer.json", "model.safetensors"):
        (tmp_path / name).symlink_to(source / name)
    (tmp_path / "1_Pooling").mkdir()
    pooling = json.loads((source / "1_Pooling" / "config.json").read_text())
    (tmp_path / "1_Pooling" / "config.json").write_text(json.dumps(pooling))
    assert supports(tmp_path)
    (tmp_path / "1_Pooling" / "config.json").write_text(json.dumps({**pooling, "pooling_mode_cls_token": True}))
    assert not supports(tmp_path)
    (tmp_path / "1_Pooling" / "config.json").write_text(json.dumps(pooling))
    (tmp_path / "modules.json").unlink()
    modules = json.loads((source / "modules.json").read_text())
    dense = {"idx": 3, "name": "3", "path": "3_Dense", "type": "sentence_transformers.models.Dense"}
    (tmp_path / "modules.json").write_text(json.dumps([*modules, dense]))
    assert not supports(tmp_path)


def test_catalog_embeddings_are_cached_atomically_and_reused(embedder, tmp_path):
    catalog = Catalog(load_catalog("example").entries[:8], source="<first 8>")
    vectors = catalog_embeddings(catalog, embedder, tmp_path)
    path = cache_path(tmp_path, catalog, embedder.model_id)
    assert path.is_file() and path.with_suffix(".json").is_file()
    assert not [p for p in path.parent.iterdir() if p.name.endswith(".tmp")]
    assert np.allclose(vectors, embedder.embed([e.embedding_text() for e in catalog.entries]), atol=1e-5)
    # The second call reads the file: a marker written into the cache comes back.
    marker = np.full_like(vectors, 0.25)
    np.save(path, marker)
    assert np.array_equal(catalog_embeddings(catalog, embedder, tmp_path), marker)
    # Other content -> other key.
    other = Catalog(load_catalog("example").entries[:9], source="<first 9>")
    assert cache_path(tmp_path, other, embedder.model_id) != path


def test_index_search_is_exact_and_family_restricted(example_index, embedder):
    query = embedder.embed(["watercolor painting style"])
    hits = example_index.search_adapters(query, 3, "sd15")
    ids = [example_index.entry(p).id for p in hits.positions_QK[0]]
    assert ids[0] == "watercolor-wash"
    assert all(example_index.entry(p).base_family == "sd15" for p in hits.positions_QK[0])
    family = example_index.family_positions["sd15"]
    brute = example_index.embeddings_ND[family] @ query[0]
    assert hits.scores_QK[0][0] == pytest.approx(brute.max(), abs=1e-6)
    with pytest.raises(MantaError, match="base family 'flux' is not in catalog"):
        example_index.search_adapters(query, 3, "flux")


def test_index_rejects_embeddings_of_another_catalog():
    catalog = load_catalog("example")
    with pytest.raises(MantaError, match="embeddings for a catalog of"):
        CatalogIndex(catalog, np.zeros((3, 4), dtype=np.float32))


def test_bf16_prefiltered_search_is_exact_even_with_near_ties(toy_catalog, unit_rows):
    """Clustered vectors put many scores within the bf16 error of the k-th; the result must still be exact."""
    from manta.catalog import CatalogEntry
    from manta.index import PREFILTER_MIN_ROWS

    rng = np.random.default_rng(0)
    rows = PREFILTER_MIN_ROWS + 500
    base = CatalogEntry("b", "checkpoint", "f", "base")
    adapters = tuple(CatalogEntry(f"a{i}", "lora", "f", "x", rank=4) for i in range(rows))
    catalog = Catalog((base, *adapters), source="<clustered>")
    centre = unit_rows(rng, 1, 32)
    vectors = centre + 0.05 * rng.normal(size=(rows + 1, 32)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    fast = CatalogIndex(catalog, vectors)
    exact = CatalogIndex(catalog, vectors, bf16_prefilter=False)
    assert "f" in fast._bf16 and "f" not in exact._bf16
    queries = centre + 0.02 * rng.normal(size=(4, 32)).astype(np.float32)
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)
    got, want = fast.search_adapters(queries, 20, "f"), exact.search_adapters(queries, 20, "f")
    assert np.allclose(got.scores_QK, want.scores_QK, atol=1e-6)
    brute = np.sort(vectors[1:] @ queries.T, axis=0)[::-1][:20].T
    assert np.allclose(got.scores_QK, brute, atol=1e-6)
