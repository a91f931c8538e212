"""Tokenizers, zarr token shards, the validation split and the mixture sampler, on real files."""

import numpy as np
import pytest
from zaya_train.config import DataConfig, SourceConfig, TokenizerConfig
from zaya_train.data import (
    ByteTokenizer,
    MixtureSampler,
    TokenShard,
    list_documents,
    load_tokenizer,
    prepare_data,
    train_bpe,
)
from zaya_train.data.corpus import iter_texts, stdlib_root
from zaya_train.data.prepare.inputs import from_documents, plan_tasks
from zaya_train.data.prepare.run import prepare_dataset
from zaya_train.errors import ZayaTrainError


def write_shard(docs, out, val_fraction, **options):
    """The documents through the one engine (datatrove, one worker), as `zaya data prepare` runs it."""
    prepare_dataset(plan_tasks(from_documents(docs)), TokenizerConfig(kind="byte"), out, val_fraction,
                    workers=1, progress=False, **options)  # fmt: skip
    return out


def _write_docs(folder, texts):
    folder.mkdir(parents=True, exist_ok=True)
    for i, text in enumerate(texts):
        (folder / f"doc{i:03d}.txt").write_text(text)
    return folder


def test_byte_tokenizer_round_trips_unicode():
    tok = ByteTokenizer()
    text = "def f(x):\n    return 'héllo ✓'\n"
    ids = tok.encode(text)
    assert ids.dtype == np.uint32 and ids.max() < 256
    assert tok.decode([*ids.tolist(), tok.eos_id]) == text


def test_bpe_is_trained_on_the_text_cached_and_round_trips(tmp_path):
    docs = list_documents(SourceConfig(path="stdlib", glob="json/*.py", exclude=[]))
    cfg = TokenizerConfig(kind="bpe", vocab_size=400)
    tok = load_tokenizer(cfg, iter_texts(docs), tmp_path)
    assert tok.vocab_size <= 400 and 0 <= tok.eos_id < tok.vocab_size
    text = docs[0].read()[:2000]
    ids = tok.encode(text)
    assert len(ids) < len(text.encode()) * 0.8  # merges learned from the corpus compress it
    assert tok.decode(ids) == text
    again = load_tokenizer(cfg, iter_texts(docs), tmp_path)  # same text -> the cached file
    assert again.path == tok.path
    # and it loads back as a plain tokenizer.json
    as_file = load_tokenizer(TokenizerConfig(kind="file", path=str(tok.path)))
    assert as_file.encode(text).tolist() == ids.tolist()


def test_shard_layout_eos_separators_offsets_and_split(tmp_path):
    texts = [f"document number {i}\n" * (i + 1) for i in range(40)]
    folder = _write_docs(tmp_path / "txt", texts)
    docs = list_documents(SourceConfig(path=str(folder), glob="*.txt", exclude=[]))
    tok = ByteTokenizer()
    shard = TokenShard(write_shard(docs, tmp_path / "s.zarr", val_fraction=0.25, chunk_tokens=64))
    train, val = shard.split("train"), shard.split("val")
    assert 0 < len(val.doc_offsets) - 1 < 40 and len(train.doc_offsets) + len(val.doc_offsets) - 2 == 40
    recovered = []
    for stream in (train, val):
        for a, b in zip(stream.doc_offsets[:-1], stream.doc_offsets[1:], strict=True):
            ids = np.asarray(stream.tokens[int(a) : int(b)])
            assert ids[-1] == tok.eos_id and (ids[:-1] != tok.eos_id).all()
            recovered.append(tok.decode(ids))
    assert sorted(recovered) == sorted(texts)
    assert shard.num_tokens["train"] + shard.num_tokens["val"] == sum(len(t) + 1 for t in texts)
    assert not list((tmp_path / "s.zarr").rglob(".tmp.*"))  # built under a temporary name, renamed into place


def test_validation_split_is_stable_across_machines_and_orders(tmp_path):
    from zaya_train.data.corpus import is_validation

    names = [f"pkg/mod{i}.py" for i in range(2000)]
    held = [n for n in names if is_validation(n, 0.1)]
    assert 150 < len(held) < 250
    assert held == [n for n in reversed(names) if is_validation(n, 0.1)][::-1]


def test_stdlib_corpus_is_present_and_excludes_site_packages():
    docs = list_documents(SourceConfig())
    assert len(docs) > 500
    assert all("site-packages" not in d.name for d in docs)
    assert any(d.name == "json/__init__.py" for d in docs)
    assert docs[0].path.is_relative_to(stdlib_root())


@pytest.mark.parametrize(
    "glob, exclude",
    [
        ("**/*.py", ["**/site-packages/**", "**/test/**", "**/tests/**"]),
        ("test/**/*.py", []),
        ("email/**/*.py", ["/email/mime/**"]),
        ("*.py", ["*/json/*"]),
    ],
)
def test_documents_are_what_pathlib_glob_finds_less_the_excluded_folders(glob, exclude):
    """The walk that skips excluded folders finds exactly pathlib's glob less the excluded files, in its order."""
    from zaya_train.data.corpus import _excluded

    root = stdlib_root()
    want = [p for p in sorted(root.glob(glob)) if p.is_file() and p.stat().st_size > 0]
    want = [p.relative_to(root).as_posix() for p in want if not _excluded(p.relative_to(root).as_posix(), exclude)]
    got = [d.name for d in list_documents(SourceConfig(path="stdlib", glob=glob, exclude=exclude))]
    assert got == want and got


def test_missing_and_empty_data_fail_with_clear_errors(tmp_path):
    with pytest.raises(ZayaTrainError, match="does not exist"):
        list_documents(SourceConfig(path=str(tmp_path / "nope")))
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "blank.txt").write_text("")
    with pytest.raises(ZayaTrainError, match="no non-empty files"):
        list_documents(SourceConfig(path=str(tmp_path / "empty"), glob="*.txt"))
    with pytest.raises(ZayaTrainError, match=r"not a zaya token shard|not a readable"):
        (tmp_path / "bad.zarr").mkdir()
        TokenShard(tmp_path / "bad.zarr")


def _sampler(tmp_path, seq_len=16, weights=None):
    texts_a = [f"alpha {i} " * 30 for i in range(30)]
    texts_b = [f"beta {i} " * 30 for i in range(30)]
    cfg = DataConfig(
        sources={
            "a": SourceConfig(path=str(_write_docs(tmp_path / "a", texts_a)), glob="*.txt"),
            "b": SourceConfig(path=str(_write_docs(tmp_path / "b", texts_b)), glob="*.txt"),
        },
        val_fraction=0.1,
    )
    data = prepare_data(cfg, tmp_path / "cache", progress=False)
    return data, MixtureSampler(data.train, weights or {"a": 3.0, "b": 1.0}, seq_len, seed=7, phase=0)


def test_sampler_is_deterministic_and_resume_is_exact(tmp_path):
    _, first = _sampler(tmp_path)
    full = [first.next_batch(8) for _ in range(60)]  # several epochs of source b
    _, second = _sampler(tmp_path)
    for _ in range(25):
        second.next_batch(8)
    state = second.state_dict()
    _, resumed = _sampler(tmp_path)
    resumed.load_state_dict(state)
    for i in range(25, 60):
        assert np.array_equal(resumed.next_batch(8), full[i])


def test_sampler_mixture_proportions_and_rank_slices(tmp_path):
    data, sampler = _sampler(tmp_path)
    picks = sampler.next_picks(400)
    share = sum(1 for name, _ in picks if name == "a") / len(picks)
    assert share == pytest.approx(0.75, abs=0.005)
    assert all(sum(1 for n, _ in picks[i : i + 4] if n == "a") == 3 for i in range(0, 400, 4))
    # two ranks' rows of a global batch are exactly the single-process global batch
    _, single = _sampler(tmp_path)
    _, r0 = _sampler(tmp_path)
    _, r1 = _sampler(tmp_path)
    for _ in range(5):
        whole = single.next_batch(8)
        assert np.array_equal(np.concatenate([r0.next_batch(8, 0, 2), r1.next_batch(8, 1, 2)]), whole)
    # windows are packed: consecutive tokens, targets shifted by one
    w = data.train["a"].window(3, 16)
    assert np.array_equal(w, np.asarray(data.train["a"].tokens[48:65]))


def test_sampler_refuses_unknown_sources_and_too_long_windows(tmp_path):
    data, _ = _sampler(tmp_path)
    with pytest.raises(ZayaTrainError, match="unknown sources"):
        MixtureSampler(data.train, {"c": 1.0}, 16, seed=0)
    with pytest.raises(ZayaTrainError, match="fewer than one sequence"):
        MixtureSampler(data.train, {"a": 1.0}, 10**7, seed=0)
    _, other_phase = _sampler(tmp_path)
    with pytest.raises(ZayaTrainError, match="sampler state is for phase"):
        MixtureSampler(data.train, {"a": 3.0, "b": 1.0}, 32, seed=7).load_state_dict(other_phase.state_dict())


def test_a_prepared_shard_is_a_source_and_a_tokenizer_mismatch_is_refused(tmp_path):
    folder = _write_docs(tmp_path / "txt", [f"text {i}\n" * 50 for i in range(20)])
    docs = list_documents(SourceConfig(path=str(folder), glob="*.txt"))
    shard = write_shard(docs, tmp_path / "ready.zarr", val_fraction=0.3)
    data = prepare_data(
        DataConfig(sources={"ready": SourceConfig(path=str(shard))}), tmp_path / "cache", progress=False
    )
    assert data.shards["ready"] == shard and data.train["ready"].num_tokens == TokenShard(shard).num_tokens["train"]
    bpe = train_bpe((d.read() for d in docs), 300, "<|endoftext|>", tmp_path / "tok.json")
    other = DataConfig(sources={"ready": SourceConfig(path=str(shard))},
                       tokenizer=TokenizerConfig(kind="file", path=str(bpe)))  # fmt: skip
    with pytest.raises(ZayaTrainError, match="was tokenized with"):
        prepare_data(other, tmp_path / "cache", progress=False)
