"""Bad input: truncated or corrupt files, missing shards, mismatched shapes, unknown formats, existing
destinations. Every error names the file (and tensor) and the source is never modified."""

import json
import re
import struct
from pathlib import Path

import pytest
import torch
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
    assert not report.ok and "checksum differs" in report.problems[0]


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


def _train_root(tmp_path: Path, write_dcp, model: dict, states: list[dict]) -> Path:
    """A zaya-train checkpoint root: a DCP step folder, per-rank train states, the manifest, `latest`."""
    import pickle

    from zaya_config.train_checkpoint.manifest import write_manifest

    root = tmp_path / "checkpoints"
    step = write_dcp({"model": model}, root / "step_00000001")
    for rank, state in enumerate(states):
        (step / f"train-rank{rank:05d}.pkl").write_bytes(pickle.dumps(state, protocol=5))
    write_manifest(step, 1, len(states))
    (root / "latest").write_text("step_00000001\n")
    return root


def test_train_state_that_cannot_be_resplit_is_refused(tmp_path: Path, write_dcp, snapshot, src_state):
    sampler = {"drawn": {"a": 4}, "seq_len": 8, "seed": 0, "phase": 0}
    common = {"progress": {"step": 1}, "sampler": sampler, "recipe": "r", "world_size": 2}
    zero1 = _train_root(
        tmp_path / "z", write_dcp, src_state["model"], [{**common, "zero1_optim": {"state": {}}}, dict(common)]
    )
    before = snapshot(zero1)
    with pytest.raises(
        ReshapeError, match=r"train-rank00000\.pkl: holds a ZeRO-1 optimizer shard.*resume this run on 2"
    ):
        convert(zero1, tmp_path / "z3", "dcp", ParallelLayout(dp=3, fsdp=True))
    assert not (tmp_path / "z3").exists() and snapshot(zero1) == before
    convert(zero1, tmp_path / "z2", "dcp", ParallelLayout(dp=2, fsdp=True))  # same world: copied byte for byte
    assert (tmp_path / "z2" / "step_00000001" / "train-rank00000.pkl").read_bytes() == (
        zero1 / "step_00000001" / "train-rank00000.pkl"
    ).read_bytes()
    apart = _train_root(
        tmp_path / "d", write_dcp, src_state["model"], [common, {**common, "sampler": {**sampler, "drawn": {"a": 5}}}]
    )
    with pytest.raises(ReshapeError, match=r"train-rank00001\.pkl: `sampler` differs from rank 0's"):
        convert(apart, tmp_path / "d1", "dcp", ParallelLayout())
    evil = _train_root(tmp_path / "e", write_dcp, src_state["model"], [{**common, "x": ParallelLayout()}, common])
    with pytest.raises(ReshapeError, match=r"references ckpt_reshape\.layout\.ParallelLayout"):
        convert(evil, tmp_path / "e1", "dcp", ParallelLayout())
    _no_leftovers(tmp_path)


def test_sidecars_with_sha256_checksums_still_verify(tmp_path: Path, src_dcp: Path):
    """Sidecars written before `checksum_algorithm` existed carry a `sha256` per tensor."""
    import hashlib

    out = tmp_path / "old.dcp"
    convert(src_dcp, out, "dcp")
    path = out / "ckpt-reshape.json"
    sidecar = json.loads(path.read_text())
    del sidecar["checksum_algorithm"]
    with open_checkpoint(src_dcp) as reader:
        for name, entry in sidecar["tensors"].items():
            del entry["checksum"]
            entry["sha256"] = hashlib.sha256(reader.read_tensor(name).reshape(-1).view(torch.uint8).numpy()).hexdigest()
    path.write_text(json.dumps(sidecar))
    assert verify(out).ok
    sidecar["tensors"]["model.final_norm.weight"]["sha256"] = "0" * 64
    path.write_text(json.dumps(sidecar))
    report = verify(out)
    assert report.problems == [
        f"{out}: tensor 'model.final_norm.weight' sha256 checksum differs from the stored one (corrupt)"
    ]


def _damage(ckpt: Path, fmt: str, name: str) -> None:
    """Flip a byte inside tensor `name`'s stored bytes, or (zarr) delete one of its chunk files."""
    if fmt == "zarr":
        chunks = sorted(p for p in (ckpt / "tensors" / name).rglob("*") if p.is_file() and p.name != "zarr.json")
        chunks[len(chunks) // 2].unlink()  # zarr itself reads a missing chunk back as the fill value
        return
    with open_checkpoint(ckpt) as reader:
        extent = reader.byte_extents(name)[0]
        path, offset = Path(extent.path), extent.offset + extent.length // 2
    data = bytearray(path.read_bytes())
    data[offset] ^= 0xFF
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("fmt", ["dcp", "zarr", "hf", "torch"])
def test_damaged_source_stops_the_conversion(tmp_path: Path, src_dcp: Path, fmt: str, snapshot):
    ours = tmp_path / f"ours.{fmt}"
    convert(src_dcp, ours, fmt, ParallelLayout(dp=4, ep=4, fsdp=True))
    with open_checkpoint(ours) as reader:
        name = next(n for n in reader.index.tensors if "gate_up" in n)
    _damage(ours, fmt, name)
    before = snapshot(ours)
    for target in ("dcp", "torch"):
        with pytest.raises(
            ReshapeError, match=rf"ours\.{fmt}: tensor '{re.escape(name)}' differs from the .* checksum"
        ):
            convert(ours, tmp_path / f"out.{target}", target, ParallelLayout(dp=2, ep=2))
        assert not (tmp_path / f"out.{target}").exists()
    assert snapshot(ours) == before
    _no_leftovers(tmp_path)
