"""Bad input: truncated or corrupt files, missing shards, mismatched shapes, unknown formats, existing
destinations. Every error names the file (and tensor) and the source is never modified."""

import json
import struct
from pathlib import Path

import pytest
from ckpt_reshape.convert import convert
from ckpt_reshape.errors import ReshapeError
from ckpt_reshape.formats import open_checkpoint
from ckpt_reshape.layout import ParallelLayout
from ckpt_reshape.verify import verify


def _no_leftovers(folder: Path) -> None:
    assert not [p.name for p in folder.iterdir() if p.name.startswith((".tmp.", ".old."))]


def test_truncated_shard_names_file_and_tensor(tmp_path: Path, src_dcp: Path, snapshot):
    out = tmp_path / "r.dcp"
    convert(src_dcp, out, "dcp", ParallelLayout(dp=2, fsdp=True))
    shard = out / "__1_0.distcp"
    shard.write_bytes(shard.read_bytes()[: shard.stat().st_size // 2])
    before = snapshot(out)
    with pytest.raises(ReshapeError, match=r"__1_0\.distcp.*(truncated|corrupt)") as err:
        convert(out, tmp_path / "x.pt", "torch")
    assert "tensor" in str(err.value)
    assert snapshot(out) == before and not (tmp_path / "x.pt").exists()
    _no_leftovers(tmp_path)


def test_corrupt_bytes_fail_verify(tmp_path: Path, src_dcp: Path):
    out = tmp_path / "c.pt"
    convert(src_dcp, out, "torch")
    data = bytearray(out.read_bytes())
    data[len(data) // 2] ^= 0xFF  # somewhere inside tensor data
    out.write_bytes(bytes(data))
    report = verify(out)
    assert not report.ok and "sha256 differs" in report.problems[0]


def test_missing_shard_is_named(tmp_path: Path, src_dcp: Path):
    out = tmp_path / "r.dcp"
    convert(src_dcp, out, "dcp", ParallelLayout(dp=4, ep=4, fsdp=True))
    (out / "__3_0.distcp").unlink()
    with pytest.raises(ReshapeError, match=r"__3_0\.distcp: shard file missing \(needed by tensor 'model\."):
        open_checkpoint(out)


def test_corrupt_metadata_is_named(tmp_path: Path, src_dcp: Path):
    out = tmp_path / "r.dcp"
    convert(src_dcp, out, "dcp")
    (out / ".metadata").write_bytes(b"not a pickle")
    with pytest.raises(ReshapeError, match=r"\.metadata: cannot read DCP metadata"):
        open_checkpoint(out)


def test_safetensors_shape_mismatch_is_named(tmp_path: Path, src_dcp: Path):
    out = tmp_path / "hf"
    convert(src_dcp, out, "hf")
    path = out / "model.safetensors"
    raw = path.read_bytes()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8 : 8 + n])
    header["final_norm.weight"]["shape"] = [33]
    blob = json.dumps(header, separators=(",", ":")).encode()
    blob += b" " * (n - len(blob))
    assert len(blob) == n
    path.write_bytes(raw[:8] + blob + raw[8 + n :])
    with pytest.raises(ReshapeError, match=r"model\.safetensors: tensor 'final_norm\.weight' is \(33,\).*mismatched"):
        open_checkpoint(out)


def test_unknown_format_and_missing_path(tmp_path: Path):
    junk = tmp_path / "junk.bin"
    junk.write_bytes(b"hello")
    with pytest.raises(ReshapeError, match=r"junk\.bin: unknown checkpoint format"):
        open_checkpoint(junk)
    with pytest.raises(ReshapeError, match="no such file"):
        open_checkpoint(tmp_path / "nope")
    with pytest.raises(ReshapeError, match="unknown target format 'npz'"):
        convert(junk, tmp_path / "o", "npz")


def test_never_overwrites_without_force(tmp_path: Path, src_dcp: Path, snapshot):
    out = tmp_path / "o.pt"
    convert(src_dcp, out, "torch")
    first = out.read_bytes()
    with pytest.raises(ReshapeError, match="already exists; pass --force"):
        convert(src_dcp, out, "torch", ParallelLayout(dp=2))
    assert out.read_bytes() == first
    convert(src_dcp, out, "torch", ParallelLayout(dp=2), force=True)
    assert out.read_bytes() != first
    with pytest.raises(ReshapeError, match="destination is the source"):
        convert(src_dcp, src_dcp, "dcp", force=True)
    _no_leftovers(tmp_path)


def test_impossible_layout_writes_nothing(tmp_path: Path, src_dcp: Path, snapshot):
    before = snapshot(src_dcp)
    with pytest.raises(ReshapeError, match=r"experts\.gate_up.*cannot be split 3 ways"):
        convert(src_dcp, tmp_path / "bad.dcp", "dcp", ParallelLayout(dp=3, ep=3))
    assert not (tmp_path / "bad.dcp").exists()
    assert snapshot(src_dcp) == before
    _no_leftovers(tmp_path)
