"""`zaya data prepare` as a real subprocess of the `zaya` CLI: byte and BPE shards, and a clear error."""

import subprocess
import sys

import numpy as np
from zaya_train.data import TokenShard


def _zaya(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "zaya_cli.app", *args], capture_output=True, text=True, timeout=300)


def _corpus(tmp_path):
    folder = tmp_path / "corpus"
    (folder / "sub").mkdir(parents=True)
    for i in range(30):
        (folder / ("sub" if i % 2 else ".") / f"f{i}.txt").write_text(f"line {i}: the quick brown fox\n" * (5 + i))
    return folder


def test_prepare_writes_a_byte_shard_with_progress_summary(tmp_path):
    folder = _corpus(tmp_path)
    proc = _zaya(
        "data", "prepare", str(folder), "--out", str(tmp_path / "c.zarr"), "--val-fraction", "0.2", "--no-progress"
    )
    assert proc.returncode == 0, proc.stderr
    assert "30 documents" in proc.stdout and "tokenizer byte" in proc.stdout
    shard = TokenShard(tmp_path / "c.zarr")
    total = sum(len(p.read_text()) + 1 for p in folder.rglob("*.txt"))
    assert shard.num_tokens["train"] + shard.num_tokens["val"] == total
    assert np.count_nonzero(np.asarray(shard.split("train").tokens) == 256) == len(shard.split("train").doc_offsets) - 1


def test_prepare_with_bpe_writes_the_tokenizer_beside_the_shard(tmp_path):
    folder = _corpus(tmp_path)
    proc = _zaya(
        "data",
        "prepare",
        str(folder),
        "--out",
        str(tmp_path / "b.zarr"),
        "--tokenizer",
        "bpe",
        "--vocab-size",
        "300",
        "--no-progress",
    )
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "b.tokenizer.json").is_file()
    shard = TokenShard(tmp_path / "b.zarr")
    assert shard.tokenizer["kind"] == "file" and shard.tokenizer["vocab_size"] <= 300
    assert shard.num_tokens["train"] < sum(len(p.read_bytes()) for p in folder.rglob("*.txt"))  # merges compress


def test_prepare_missing_input_fails_with_a_clear_message(tmp_path):
    proc = _zaya("data", "prepare", str(tmp_path / "missing"), "--out", str(tmp_path / "x.zarr"))
    assert proc.returncode == 2
    assert "does not exist" in proc.stderr and not (tmp_path / "x.zarr").exists()
