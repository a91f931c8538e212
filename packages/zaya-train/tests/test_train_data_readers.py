"""Corpus readers (zaya_train.data.readers) on small real files of every format: the same documents with
stable names from jsonl (plain, gzip, zstd), parquet (several row groups), a `datasets` folder and text;
bad records named by file and line or row, or skipped and counted."""

import gzip
import json

import pytest
from zaya_train.data.corpus import is_validation
from zaya_train.data.readers import ReadStats, corpus_files, detect_format, iter_documents
from zaya_train.errors import ZayaTrainError

TEXTS = [f"document {i}: " + "héllo ✓ " * (i % 4 + 1) for i in range(12)]


def _jsonl_bytes(records) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in records).encode()


@pytest.fixture
def corpus(tmp_path):
    """The same 12 records in every format (an `id` column beside `text`, and a `body` copy)."""
    import datasets
    import pyarrow as pa
    import pyarrow.parquet as pq
    import zstandard

    records = [{"text": t, "id": i, "body": t.upper()} for i, t in enumerate(TEXTS)]
    body = _jsonl_bytes(records)
    (tmp_path / "c.jsonl").write_bytes(body)
    (tmp_path / "c.jsonl.gz").write_bytes(gzip.compress(body))
    (tmp_path / "c.jsonl.zst").write_bytes(zstandard.ZstdCompressor().compress(body))
    pq.write_table(pa.Table.from_pylist(records), tmp_path / "c.parquet", row_group_size=5)
    datasets.disable_progress_bars()
    datasets.Dataset.from_list(records).save_to_disk(str(tmp_path / "hf"), max_shard_size="1KB")
    return tmp_path


@pytest.mark.parametrize(
    ("name", "fmt", "doc_name"),
    [
        ("c.jsonl", "jsonl", "c.jsonl:{line}"),
        ("c.jsonl.gz", "jsonl", "c.jsonl.gz:{line}"),
        ("c.jsonl.zst", "jsonl", "c.jsonl.zst:{line}"),
        ("c.parquet", "parquet", "c.parquet:{row}"),
        ("hf", "datasets", "dataset:{row}"),
    ],
)
def test_each_format_yields_every_record_in_order_with_stable_names(corpus, name, fmt, doc_name):
    assert detect_format(corpus / name) == fmt
    stats = ReadStats()
    docs = list(iter_documents(corpus / name, stats=stats))
    assert [d.text for d in docs] == TEXTS
    assert [d.name for d in docs] == [doc_name.format(line=i + 1, row=i) for i in range(len(TEXTS))]
    assert (stats.documents, stats.skipped, stats.empty) == (len(TEXTS), 0, 0)
    other = [d.text for d in iter_documents(corpus / name, field="body")]  # any field by name
    assert other == [t.upper() for t in TEXTS]


def test_parquet_streams_by_row_group_and_datasets_by_arrow_file(corpus):
    import datasets
    import pyarrow.parquet as pq

    assert pq.ParquetFile(corpus / "c.parquet").num_row_groups == 3
    state = json.loads((corpus / "hf" / "state.json").read_text())
    assert len(state["_data_files"]) > 1  # several Arrow files, read in state.json's order
    assert [d.text for d in iter_documents(corpus / "hf")] == datasets.load_from_disk(str(corpus / "hf"))["text"]


def test_a_dataset_dict_is_read_split_by_split(tmp_path):
    import datasets

    datasets.disable_progress_bars()
    dd = datasets.DatasetDict(
        {
            "train": datasets.Dataset.from_dict({"text": TEXTS[:7]}),
            "test": datasets.Dataset.from_dict({"text": TEXTS[7:]}),
        }
    )
    dd.save_to_disk(str(tmp_path / "dd"))
    docs = list(iter_documents(tmp_path / "dd"))
    assert [d.text for d in docs] == TEXTS
    assert [d.name for d in docs][6:8] == ["train:6", "test:0"]


def test_a_folder_of_jsonl_files_names_documents_by_relative_path(tmp_path):
    (tmp_path / "crawl" / "b").mkdir(parents=True)
    (tmp_path / "crawl" / "a.jsonl").write_bytes(_jsonl_bytes([{"text": "one"}, {"text": "two"}]))
    (tmp_path / "crawl" / "b" / "c.jsonl.gz").write_bytes(gzip.compress(_jsonl_bytes([{"text": "three"}])))
    (tmp_path / "crawl" / "README").write_text("not a corpus file")
    assert detect_format(tmp_path / "crawl") == "jsonl"
    docs = list(iter_documents(tmp_path / "crawl"))
    assert [(d.name, d.text) for d in docs] == [("a.jsonl:1", "one"), ("a.jsonl:2", "two"), ("b/c.jsonl.gz:1", "three")]
    files = corpus_files(tmp_path / "crawl")
    assert [d.name for d in iter_documents(tmp_path / "crawl", files=files[1:])] == ["b/c.jsonl.gz:1"]


def test_text_files_are_one_document_each_as_before(tmp_path):
    (tmp_path / "t").mkdir()
    (tmp_path / "t" / "a.txt").write_text("alpha")
    (tmp_path / "t" / "b.txt").write_bytes(b"beta \xff")  # undecodable bytes replaced, as always
    (tmp_path / "t" / "empty.txt").write_text("")
    assert detect_format(tmp_path / "t") == "text"
    assert [(d.name, d.text) for d in iter_documents(tmp_path / "t")] == [("a.txt", "alpha"), ("b.txt", "beta \ufffd")]
    assert [d.text for d in iter_documents(tmp_path / "t" / "a.txt")] == ["alpha"]


def test_names_keep_the_validation_split_stable(corpus):
    """The split hashes the name: the same file gives the same held-out documents on every read."""
    held = [d.name for d in iter_documents(corpus / "c.jsonl") if is_validation(d.name, 0.3)]
    again = [d.name for d in iter_documents(corpus / "c.jsonl") if is_validation(d.name, 0.3)]
    assert held == again and 0 < len(held) < len(TEXTS)


BAD_JSONL = [
    (b'{"text": 3}\n', "line 2: field 'text' is int, not a string"),
    (b"{broken\n", "line 2: invalid JSON"),
    (b'{"title": "x"}\n', "line 2: no field 'text' (fields: title)"),
    (b'{"text": "caf\xe9"}\n', "line 2: not UTF-8 (byte 0xe9"),
    (b'{"text": null}\n', "line 2: field 'text' is null"),
    (b"[1, 2]\n", "line 2: a JSON list"),
]


@pytest.mark.parametrize(("line", "message"), BAD_JSONL)
def test_a_bad_jsonl_record_raises_naming_file_and_line(tmp_path, line, message):
    path = tmp_path / "bad.jsonl"
    path.write_bytes(b'{"text": "fine"}\n' + line + b'{"text": "also fine"}\n')
    with pytest.raises(ZayaTrainError) as err:
        list(iter_documents(path))
    assert str(err.value).startswith(f"{path}, {message}")
    assert "\n" not in str(err.value) and "--on-error skip" in str(err.value)


def test_skip_counts_bad_records_and_keeps_the_rest(tmp_path):
    path = tmp_path / "bad.jsonl.zst"
    import zstandard

    lines = b'{"text": "fine"}\n' + b"".join(line for line, _ in BAD_JSONL) + b'{"text": ""}\n{"text": "end"}\n'
    path.write_bytes(zstandard.ZstdCompressor().compress(lines))
    stats = ReadStats()
    docs = list(iter_documents(path, on_error="skip", stats=stats))
    assert [(d.name, d.text) for d in docs] == [("bad.jsonl.zst:1", "fine"), ("bad.jsonl.zst:9", "end")]
    assert (stats.documents, stats.skipped, stats.empty) == (2, len(BAD_JSONL), 1)
    assert stats.examples[0].endswith("line 2: field 'text' is int, not a string")
    assert "6 bad records skipped" in stats.summary()


def test_bad_parquet_and_datasets_rows_are_named_by_row(tmp_path):
    import datasets
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"text": ["a", None, "c"], "n": [1, 2, 3]}), tmp_path / "p.parquet", row_group_size=2)
    with pytest.raises(ZayaTrainError, match=r"p\.parquet, row 1: field 'text' is null, not a string"):
        list(iter_documents(tmp_path / "p.parquet"))
    with pytest.raises(ZayaTrainError, match=r"row 0: field 'n' is int, not a string"):
        list(iter_documents(tmp_path / "p.parquet", field="n"))
    with pytest.raises(ZayaTrainError, match=r"has no column 'body' \(columns: text, n\)"):
        list(iter_documents(tmp_path / "p.parquet", field="body"))
    pq.write_table(pa.table({"text": pa.array([b"ok", b"\xff!"], pa.binary())}), tmp_path / "b.parquet")
    stats = ReadStats()
    assert [d.text for d in iter_documents(tmp_path / "b.parquet", on_error="skip", stats=stats)] == ["ok"]
    assert stats.skipped == 1 and "b.parquet, row 1: field 'text' is not UTF-8" in stats.examples[0]
    datasets.disable_progress_bars()
    datasets.Dataset.from_dict({"text": ["x", "y", None]}).save_to_disk(str(tmp_path / "hf"))
    with pytest.raises(ZayaTrainError, match=r"hf, row 2: field 'text' is null"):
        list(iter_documents(tmp_path / "hf"))


def test_bad_arguments_are_one_line_each(tmp_path):
    (tmp_path / "a.jsonl").write_bytes(_jsonl_bytes([{"text": "x"}]))
    with pytest.raises(ZayaTrainError, match=r"on_error = 'ignore'; allowed: raise, skip"):
        list(iter_documents(tmp_path / "a.jsonl", on_error="ignore"))
    with pytest.raises(ZayaTrainError, match=r"format = 'csv'; allowed: jsonl, parquet, datasets, text"):
        list(iter_documents(tmp_path / "a.jsonl", format="csv"))
    with pytest.raises(ZayaTrainError, match=r"corpus path .*missing does not exist"):
        list(iter_documents(tmp_path / "missing"))
    with pytest.raises(ZayaTrainError, match=r"not a folder written by datasets' save_to_disk"):
        list(iter_documents(tmp_path, format="datasets"))
    (tmp_path / "x.parquet").write_bytes(b"not parquet")
    with pytest.raises(ZayaTrainError, match=r"x\.parquet is not a readable parquet file"):
        list(iter_documents(tmp_path / "x.parquet"))
    # the format overrides detection: the jsonl file read as text is one document
    assert [d.text for d in iter_documents(tmp_path / "a.jsonl", format="text")] == ['{"text": "x"}\n']
