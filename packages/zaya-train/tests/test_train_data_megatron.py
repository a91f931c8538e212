"""Megatron's indexed dataset (`.bin/.idx`): megatron-core's own files read exactly by ours and ours by
megatron-core; a prefix as a training source (splits, tokenizer checks, a few real training steps);
`zaya data inspect` and `zaya data convert` (zarr -> megatron -> zarr bit for bit) and their bad input."""

import json

import numpy as np
import pytest
from typer.testing import CliRunner
from zaya_config.atomic import write_dir_atomic
from zaya_train.cli import data_app
from zaya_train.config import DataConfig, SourceConfig
from zaya_train.data import ByteTokenizer, TokenShard, prepare_data
from zaya_train.data.corpus import is_validation, list_documents
from zaya_train.data.megatron_indexed import MegatronIndexed, write_megatron
from zaya_train.data.megatron_notes import notes_path
from zaya_train.data.shards import ShardBuilder
from zaya_train.errors import ZayaTrainError


def _documents(seed: int, count: int, vocab: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.integers(0, vocab, size=int(n)) for n in rng.integers(0, 50, size=count)]


def _stdlib_ids(glob: str) -> list[np.ndarray]:
    """Real documents: standard-library files in bytes, EOS after each (what Megatron's --append-eod does)."""
    tok = ByteTokenizer()
    docs = list_documents(SourceConfig(path="stdlib", glob=glob, exclude=[]))
    return [np.append(tok.encode(d.read()), np.uint32(tok.eos_id)) for d in docs]


def _zarr(path, docs: list[np.ndarray], val: set[int]):
    """A zarr shard through the real shard writer (ShardBuilder) with the byte tokenizer's identity."""

    def fill(tmp):
        builder = ShardBuilder(tmp, ByteTokenizer().describe(), chunk_tokens=256)
        for i, ids in enumerate(docs):
            builder.add(np.asarray(ids, np.uint32), "val" if i in val else "train")
        builder.close()

    return write_dir_atomic(path, fill)


def _cli(*args: str):
    return CliRunner().invoke(data_app, [str(a) for a in args])


@pytest.mark.slow
def test_megatron_core_and_we_read_each_others_files_exactly(tmp_path):
    import torch
    from megatron.core.datasets.indexed_dataset import IndexedDataset, IndexedDatasetBuilder

    for dtype, vocab in ((np.uint16, 50_000), (np.int32, 200_000)):
        docs = _documents(0, 40, vocab)
        theirs = str(tmp_path / f"theirs_{np.dtype(dtype).name}")
        builder = IndexedDatasetBuilder(f"{theirs}.bin", dtype=dtype)
        for ids in docs[:20]:  # one sequence per document, as preprocess_data.py writes it
            builder.add_document(torch.from_numpy(ids), [len(ids)])
        for ids in docs[20:]:  # several sequences per document (sentence splitting)
            half = len(ids) // 2
            builder.add_item(torch.from_numpy(ids[:half]))
            builder.add_item(torch.from_numpy(ids[half:]))
            builder.end_document()
        builder.finalize(f"{theirs}.idx")
        read = MegatronIndexed(theirs)
        assert (read.num_documents, read.dtype, read.num_tokens) == (40, np.dtype(dtype), sum(map(len, docs)))
        for i, ids in enumerate(docs):
            assert np.array_equal(read.document(i), ids)

        ours = write_megatron(tmp_path / f"ours_{np.dtype(dtype).name}", docs, dtype)
        dataset = IndexedDataset(str(ours))
        assert len(dataset) == 40 and dataset.document_indices.tolist() == list(range(41))
        for i, ids in enumerate(docs):
            assert dataset[i].dtype == dtype and np.array_equal(dataset[i], ids)
        assert (tmp_path / f"ours_{np.dtype(dtype).name}.idx").read_bytes()[:9] == b"MMIDIDX\x00\x00"


def test_convert_round_trips_zarr_to_megatron_to_zarr_bit_for_bit(tmp_path):
    docs = _stdlib_ids("json/*.py")
    _zarr(tmp_path / "a.zarr", docs, val={1, 3})
    result = _cli("convert", tmp_path / "a.zarr", tmp_path / "m" / "corpus_text_document", "--to", "megatron")
    assert result.exit_code == 0, result.output
    prefix = tmp_path / "m" / "corpus_text_document"
    read = MegatronIndexed(prefix)
    assert read.dtype == np.uint16  # a 257-id vocabulary fits Megatron's small dtype
    order = [i for i in range(len(docs)) if i not in {1, 3}] + [1, 3]  # the train split, then validation
    assert [read.document(j).tolist() for j in range(len(docs))] == [docs[i].tolist() for i in order]
    assert _cli("convert", prefix, tmp_path / "b.zarr", "--to", "zarr", "--no-progress").exit_code == 0
    before, after = TokenShard(tmp_path / "a.zarr"), TokenShard(tmp_path / "b.zarr")
    assert after.tokenizer == before.tokenizer and after.num_docs == before.num_docs
    for split in ("train", "val"):
        a, b = before.split(split), after.split(split)
        assert np.asarray(b.tokens).tobytes() == np.asarray(a.tokens).tobytes()
        assert b.doc_offsets.tobytes() == a.doc_offsets.tobytes()
    one = _cli("convert", tmp_path / "a.zarr", tmp_path / "train_only", "--to", "megatron", "--split", "train")
    assert one.exit_code == 0 and MegatronIndexed(tmp_path / "train_only").num_documents == len(docs) - 2


def test_convert_refuses_an_existing_destination_unless_overwrite(tmp_path):
    _zarr(tmp_path / "a.zarr", _documents(1, 5, 257), val=set())
    prefix = tmp_path / "out"
    assert _cli("convert", tmp_path / "a.zarr", prefix, "--to", "megatron").exit_code == 0
    again = _cli("convert", tmp_path / "a.zarr", prefix, "--to", "megatron")
    assert again.exit_code == 2 and "already exists; pass --overwrite" in again.output
    _zarr(tmp_path / "c.zarr", _documents(2, 7, 257), val=set())
    assert _cli("convert", tmp_path / "c.zarr", prefix, "--to", "megatron", "--overwrite").exit_code == 0
    assert MegatronIndexed(prefix).num_documents == 7
    assert not list(tmp_path.glob(".tmp.*"))  # built under temporary names, renamed into place
    exists = _cli("convert", prefix, tmp_path / "a.zarr", "--to", "zarr")
    assert exists.exit_code == 2 and "a.zarr already exists" in exists.output


def test_inspect_json_for_zarr_and_megatron(tmp_path):
    docs = _documents(3, 6, 257)
    _zarr(tmp_path / "a.zarr", docs, val={0})
    out = _cli("inspect", tmp_path / "a.zarr", "--json")
    assert out.exit_code == 0, out.output
    info = json.loads(out.output)
    assert {k: info[k] for k in ("format", "documents", "tokens", "dtype")} == {
        "format": "zarr",
        "documents": 6,
        "tokens": sum(map(len, docs)),
        "dtype": "uint32",
    }
    assert info["first_document"] == docs[1].tolist()  # the train split's first document
    write_megatron(tmp_path / "m", docs, np.int32)
    info = json.loads(_cli("inspect", tmp_path / "m.idx", "--json").output)  # .bin/.idx name the prefix too
    assert info == {
        "format": "megatron",
        "path": str(tmp_path / "m"),
        "documents": 6,
        "tokens": sum(map(len, docs)),
        "dtype": "int32",
        "first_document": docs[0].tolist(),
    }
    table = _cli("inspect", tmp_path / "m")
    assert table.exit_code == 0 and "megatron" in table.output and "int32" in table.output


def _broken(tmp_path, how: str):
    prefix = write_megatron(tmp_path / how, _documents(4, 5, 257), np.uint16)
    binary, index = tmp_path / f"{how}.bin", tmp_path / f"{how}.idx"
    if how == "missing_idx":
        index.unlink()
    elif how == "truncated_bin":
        binary.write_bytes(binary.read_bytes()[:-3])
    elif how == "wrong_magic":
        index.write_bytes(b"NOTMEGA\x00\x00" + index.read_bytes()[9:])
    elif how == "truncated_idx":
        index.write_bytes(index.read_bytes()[:-8])
    return prefix


@pytest.mark.parametrize(
    ("how", "message"),
    [
        ("missing_idx", r"missing_idx\.idx is missing; a prefix needs both"),
        ("truncated_bin", r"truncated_bin\.bin: \d+ bytes, but .* the \.bin is truncated"),
        ("wrong_magic", r"wrong_magic\.idx is not a Megatron index"),
        ("truncated_idx", r"truncated_idx\.idx: \d+ bytes, .* the index is truncated or corrupt"),
    ],
)
def test_bad_megatron_files_are_one_line_for_inspect_and_convert(tmp_path, how, message):
    import re

    prefix = _broken(tmp_path, how)
    for args in (("inspect", prefix), ("convert", prefix, tmp_path / "x.zarr", "--to", "zarr", "--tokenizer", "byte")):
        result = _cli(*args)
        assert result.exit_code == 2
        line = result.output.strip()
        assert "\n" not in line and re.search(message, line), line
    assert not (tmp_path / "x.zarr").exists()
    nothing = _cli("inspect", tmp_path / "nothing")
    assert nothing.exit_code == 2 and "neither a prepared zarr dataset" in nothing.output


def test_a_prefix_zaya_did_not_write_needs_the_tokenizer_and_splits_by_document_index(tmp_path):
    docs = _documents(5, 60, 257)
    prefix = write_megatron(tmp_path / "p", docs, np.uint16)
    refused = _cli("convert", prefix, tmp_path / "z.zarr", "--to", "zarr")
    assert refused.exit_code == 2 and "--tokenizer" in refused.output
    ok = _cli("convert", prefix, tmp_path / "z.zarr", "--to", "zarr", "--tokenizer", "byte", "--val-fraction", "0.2")
    assert ok.exit_code == 0, ok.output
    held = [i for i in range(60) if is_validation(str(i), 0.2)]
    assert 0 < len(held) < 30
    val = TokenShard(tmp_path / "z.zarr").split("val")
    assert np.asarray(val.tokens).tolist() == np.concatenate([docs[i] for i in held]).tolist()
    big = write_megatron(tmp_path / "big", [np.array([5, 300, 7])], np.uint16)
    too_big = _cli("convert", big, tmp_path / "q.zarr", "--to", "zarr", "--tokenizer", "byte")
    assert too_big.exit_code == 2 and "holds id 300 >= the tokenizer's vocab_size 257" in too_big.output


def test_a_megatron_prefix_is_a_training_source_with_its_tokenizer_checked(tmp_path):
    docs = _stdlib_ids("json/*.py")
    prefix = write_megatron(tmp_path / "json_text_document", docs, np.uint16)
    cfg = DataConfig(sources={"json": SourceConfig(path=str(prefix))}, val_fraction=0.3)
    data = prepare_data(cfg, tmp_path / "cache", progress=False)
    held = [i for i in range(len(docs)) if is_validation(str(i), 0.3)]
    kept = [i for i in range(len(docs)) if i not in held]
    assert np.asarray(data.val["json"].tokens).tolist() == np.concatenate([docs[i] for i in held]).tolist()
    assert np.asarray(data.train["json"].tokens).tolist() == np.concatenate([docs[i] for i in kept]).tolist()
    assert data.train["json"].doc_offsets.tolist() == np.cumsum([0] + [len(docs[i]) for i in kept]).tolist()
    assert not (tmp_path / "cache").exists() or not list((tmp_path / "cache").glob("json-*"))  # read in place

    for source, message in [
        (SourceConfig(path=str(prefix), vocab_size=50_000), r"json\.vocab_size = 50000, but the run's tokenizer has"),
        (SourceConfig(path=str(prefix), eos_id=0), r"json\.eos_id = 0, but the run's tokenizer has eos_id 256"),
    ]:
        with pytest.raises(ZayaTrainError, match=message):
            prepare_data(DataConfig(sources={"json": source}), tmp_path / "cache", progress=False)
    wide = write_megatron(tmp_path / "wide", [np.array([1, 2, 3]), np.array([4, 1000, 256])], np.uint16)
    with pytest.raises(ZayaTrainError, match=r"holds id 1000 >= the run tokenizer's vocab_size 257"):
        prepare_data(DataConfig(sources={"w": SourceConfig(path=str(wide))}), tmp_path / "cache", progress=False)


def test_the_notes_of_a_converted_prefix_keep_its_split_and_tokenizer(tmp_path):
    docs = _documents(6, 12, 257)
    _zarr(tmp_path / "a.zarr", docs, val={2, 5, 7})
    assert _cli("convert", tmp_path / "a.zarr", tmp_path / "m", "--to", "megatron").exit_code == 0
    notes = json.loads(notes_path(tmp_path / "m").read_text())
    assert notes["splits"] == {"train": 9, "val": 3} and notes["tokenizer"]["fingerprint"] == "byte-v1"
    data = prepare_data(
        DataConfig(sources={"m": SourceConfig(path=str(tmp_path / "m"))}), tmp_path / "c", progress=False
    )
    shard = TokenShard(tmp_path / "a.zarr")
    for split in ("train", "val"):
        assert np.asarray(getattr(data, split)["m"].tokens).tolist() == np.asarray(shard.split(split).tokens).tolist()
    notes_path(tmp_path / "m").write_text(json.dumps({**notes, "tokenizer": {"fingerprint": "other", "eos_id": 3}}))
    with pytest.raises(ZayaTrainError, match=r"was tokenized with .*other.* but the run uses"):
        prepare_data(DataConfig(sources={"m": SourceConfig(path=str(tmp_path / "m"))}), tmp_path / "c", progress=False)


def test_training_on_a_megatron_prefix_runs_steps(make_trainer, tmp_path):
    json_prefix = write_megatron(tmp_path / "json_text_document", _stdlib_ids("json/*.py"), np.uint16)
    email_prefix = write_megatron(tmp_path / "email_text_document", _stdlib_ids("email/*.py"), np.uint16)
    sources = {
        "json": SourceConfig(path=str(json_prefix), vocab_size=257, eos_id=256),
        "email": SourceConfig(path=str(email_prefix)),
    }
    trainer = make_trainer(max_steps=3, data=DataConfig(sources=sources, val_fraction=0.3))
    assert trainer.data.shards == {"json": json_prefix, "email": email_prefix}
    summary = trainer.run()
    assert summary["steps"] == 3 and np.isfinite(summary["final_val_loss"])
    assert summary["final_train_loss"] < summary["first_val_loss"]  # it learns from the ids it read


def test_a_split_larger_than_memory_reads_windows_from_the_memory_map(tmp_path, monkeypatch):
    """Above the in-memory limit a split is a view of the `.bin` (runs of kept documents): same windows."""
    from zaya_train.data import megatron_source

    docs = _documents(7, 80, 257)
    prefix = write_megatron(tmp_path / "p", docs, np.uint16)
    source = SourceConfig(path=str(prefix))
    in_memory = megatron_source.megatron_streams(source, ByteTokenizer(), 0.3, "s")
    monkeypatch.setattr(megatron_source, "IN_MEMORY_LIMIT_BYTES", 0)
    mapped = megatron_source.megatron_streams(source, ByteTokenizer(), 0.3, "s")
    for split in ("train", "val"):
        assert not isinstance(mapped[split].tokens, np.ndarray)
        assert mapped[split].doc_offsets.tolist() == in_memory[split].doc_offsets.tolist()
        windows = in_memory[split].num_windows(16)
        assert windows > 0 and mapped[split].num_windows(16) == windows
        for index in range(windows):
            assert np.array_equal(mapped[split].window(index, 16), in_memory[split].window(index, 16))


def test_bad_convert_options_and_source_keys_are_one_line(tmp_path):
    from zaya_config.errors import ZayaConfigError

    _zarr(tmp_path / "a.zarr", _documents(8, 4, 257), val=set())
    for args, message in [
        (("--to", "hdf5"), "--to 'hdf5'; allowed: zarr, megatron"),
        (("--to", "megatron", "--split", "test"), "--split 'test'; allowed: all, train, val"),
        (("--to", "zarr"), "is already zarr"),
    ]:
        result = _cli("convert", tmp_path / "a.zarr", tmp_path / "out", *args)
        assert result.exit_code == 2 and message in result.output, result.output
    for key, value in (("vocab_size", 0), ("eos_id", -1)):
        with pytest.raises(ZayaConfigError, match=key):
            SourceConfig(path=str(tmp_path / "p"), **{key: value}).validate()


@pytest.mark.parametrize("block", [1, 37, 1 << 24])
def test_zarr_documents_are_read_a_block_of_whole_documents_at_a_time(tmp_path, block):
    from zaya_train.data.convert import _zarr_documents

    docs = _documents(9, 30, 257)
    _zarr(tmp_path / "a.zarr", docs, val={4, 9})
    order = [i for i in range(30) if i not in {4, 9}] + [4, 9]
    read = list(_zarr_documents(TokenShard(tmp_path / "a.zarr"), ("train", "val"), lambda: None, block))
    assert [r.tolist() for r in read] == [docs[i].tolist() for i in order]


def test_the_hash_split_of_a_prefix_is_kept_in_the_data_cache(tmp_path):
    prefix = write_megatron(tmp_path / "p", _documents(10, 50, 257), np.uint16)
    cfg = DataConfig(sources={"p": SourceConfig(path=str(prefix))}, val_fraction=0.2)
    first = prepare_data(cfg, tmp_path / "cache", progress=False)
    (kept,) = (tmp_path / "cache").glob("megatron-split-p-*.npy")
    expected = [is_validation(str(i), 0.2) for i in range(50)]
    assert np.unpackbits(np.load(kept), count=50).astype(bool).tolist() == expected
    again = prepare_data(cfg, tmp_path / "cache", progress=False)  # read from the cache
    assert np.asarray(again.val["p"].tokens).tolist() == np.asarray(first.val["p"].tokens).tolist()
    docs = _documents(11, 70, 257)
    write_megatron(prefix, docs, np.uint16)  # new files: a new key, the split of the new documents
    held = [i for i in range(70) if is_validation(str(i), 0.2)]
    fresh = prepare_data(cfg, tmp_path / "cache", progress=False)
    assert np.asarray(fresh.val["p"].tokens).tolist() == np.concatenate([docs[i] for i in held]).tolist()
    assert len(list((tmp_path / "cache").glob("megatron-split-p-*.npy"))) == 2
