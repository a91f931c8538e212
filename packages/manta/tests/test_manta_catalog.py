"""Catalog loading (JSONL, CSV, Parquet), validation with line numbers, hashing, synthetic catalogs."""

import json

import pytest
from manta.catalog import Catalog, example_catalog_path, load_catalog, write_catalog
from manta.errors import MantaError
from manta.synthetic import synthetic_catalog, synthetic_entries

CKPT = {"id": "b", "kind": "checkpoint", "base_family": "sd15", "description": "base", "vram_bytes": 3_000_000_000}
LORA = {
    "id": "l",
    "kind": "lora",
    "base_family": "sd15",
    "description": "cats",
    "rank": 8,
    "tags": ["cat", "pet"],
    "weight_range": [0.2, 0.9],
}


def test_example_catalog_has_checkpoints_and_adapters_for_each_family():
    catalog = load_catalog("example")
    assert catalog.source == str(example_catalog_path())
    families = {e.base_family for e in catalog.checkpoints}
    assert families == {"sd15", "sdxl"}
    assert len(catalog.adapters) >= 30
    assert {e.base_family for e in catalog.adapters} <= families
    assert all(e.vram_bytes > 0 and e.step_latency_ms > 0 for e in catalog.entries)


def test_jsonl_fields_are_parsed(tmp_path, write_jsonl):
    catalog = load_catalog(write_jsonl(tmp_path / "c.jsonl", [CKPT, LORA]))
    lora = catalog["l"]
    assert lora.tags == ("cat", "pet") and (lora.weight_min, lora.weight_max) == (0.2, 0.9)
    assert lora.is_adapter and not catalog["b"].is_adapter
    assert "cats" in lora.embedding_text() and "cat, pet" in lora.embedding_text()


@pytest.mark.parametrize("suffix", [".jsonl", ".csv"])
def test_write_then_load_round_trips(tmp_path, suffix):
    catalog = load_catalog("example")
    path = write_catalog(catalog.entries, tmp_path / f"copy{suffix}")
    again = load_catalog(path)
    assert again.entries == catalog.entries
    assert again.content_hash == catalog.content_hash


def test_parquet_round_trips(tmp_path):
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    catalog = load_catalog("example")
    pq.write_table(pa.Table.from_pylist([e.to_row() for e in catalog.entries]), tmp_path / "c.parquet")
    assert load_catalog(tmp_path / "c.parquet").entries == catalog.entries


@pytest.mark.parametrize(
    ("bad_row", "message"),
    [
        ({**LORA, "rank": "eight"}, "line 2: rank = 'eight' is not a number"),
        ({**LORA, "kind": "hypernetwork"}, "line 2: kind = 'hypernetwork'; allowed: one of checkpoint, lora"),
        ({k: v for k, v in LORA.items() if k != "description"}, "line 2: missing required field(s) description"),
        ({**LORA, "vram_bytes": -5}, "line 2: vram_bytes = -5; allowed: a number >= 0"),
        ({**LORA, "weight_range": [0.9, 0.1]}, "line 2: weight range [0.9, 0.1] is empty"),
        ({**LORA, "quality": 3}, "line 2: quality = 3.0; allowed: a number in [0, 1]"),
        ({**LORA, "rank": 0}, "line 2: rank = 0; allowed: an integer > 0 for an adapter"),
    ],
)
def test_malformed_jsonl_rows_are_named_by_line(tmp_path, write_jsonl, bad_row, message):
    path = write_jsonl(tmp_path / "c.jsonl", [CKPT, bad_row])
    with pytest.raises(MantaError, match=r"c\.jsonl") as err:
        load_catalog(path)
    assert message in str(err.value)


def test_invalid_json_line_is_named(tmp_path):
    path = tmp_path / "c.jsonl"
    path.write_text(json.dumps(CKPT) + "\n\n{not json\n")
    with pytest.raises(MantaError, match=r"line 3: not valid JSON"):
        load_catalog(path)


def test_malformed_csv_row_is_named_by_its_file_line(tmp_path):
    path = tmp_path / "c.csv"
    path.write_text(
        "id,kind,base_family,description,rank,vram_bytes\nb,checkpoint,sd15,base,0,100\nl,lora,sd15,cats,8,lots\n"
    )
    with pytest.raises(MantaError, match=r"c.csv, line 3: vram_bytes = 'lots' is not a number"):
        load_catalog(path)


def test_adapter_for_a_family_without_checkpoint_is_rejected(tmp_path, write_jsonl):
    path = write_jsonl(tmp_path / "c.jsonl", [CKPT, {**LORA, "base_family": "flux"}])
    with pytest.raises(MantaError, match=r"record 2 \('l'\): adapter for base family 'flux'.*families: sd15"):
        load_catalog(path)


def test_duplicate_ids_and_missing_files_and_formats(tmp_path, write_jsonl):
    with pytest.raises(MantaError, match="duplicate id 'b'"):
        load_catalog(write_jsonl(tmp_path / "d.jsonl", [CKPT, CKPT]))
    with pytest.raises(MantaError, match="does not exist"):
        load_catalog(tmp_path / "missing.jsonl")
    (tmp_path / "c.txt").write_text("x")
    with pytest.raises(MantaError, match=r"unknown format '\.txt'"):
        load_catalog(tmp_path / "c.txt")
    with pytest.raises(MantaError, match="no base checkpoint"):
        load_catalog(write_jsonl(tmp_path / "a.jsonl", [LORA]))


def test_content_hash_follows_content_not_file(tmp_path, write_jsonl):
    first = load_catalog(write_jsonl(tmp_path / "a.jsonl", [CKPT, LORA]))
    same = load_catalog(write_jsonl(tmp_path / "b.jsonl", [CKPT, LORA]))
    edited = load_catalog(write_jsonl(tmp_path / "c.jsonl", [CKPT, {**LORA, "description": "dogs"}]))
    assert first.content_hash == same.content_hash != edited.content_hash


def test_synthetic_catalog_is_seeded_and_valid():
    a, b = synthetic_entries(500, seed=3), synthetic_entries(500, seed=3)
    assert a == b and a != synthetic_entries(500, seed=4)
    catalog = synthetic_catalog(500, checkpoints_per_family=2, seed=3)
    assert isinstance(catalog, Catalog)
    assert len(catalog.checkpoints) == 8 and len(catalog.adapters) == 500
    assert {e.base_family for e in catalog.adapters} == {"sd15", "sdxl", "sd3", "flux"}
    assert len({e.description for e in catalog.adapters}) > 400
