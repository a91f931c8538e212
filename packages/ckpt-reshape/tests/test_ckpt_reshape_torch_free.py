"""The torch-free conversion path (DCP to DCP as byte ranges, `convert(torch_free=...)`) writes the very bytes
of the torch path, falls back to torch where it must, and really imports no torch."""

import io
import json
import pickle
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from ckpt_reshape import dcp_light
from ckpt_reshape.convert import convert
from ckpt_reshape.errors import ReshapeError
from ckpt_reshape.layout import ParallelLayout
from ckpt_reshape.skeleton import write_skeleton
from ckpt_reshape.torch_names import DTYPES, NeedsTorch
from ckpt_reshape.verify import compare, verify


def _files(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def _same_bytes(a: Path, b: Path) -> None:
    fa, fb = _files(a), _files(b)
    assert sorted(fa) == sorted(fb)
    for name in fa:
        if name == "ckpt-reshape.json":  # names its destination's source path only; the same here
            assert json.loads(fa[name]) == json.loads(fb[name])
        assert fa[name] == fb[name], name


@pytest.mark.parametrize(
    "layout", [None, ParallelLayout(dp=4, ep=4, fsdp=True), ParallelLayout(dp=3, fsdp=True)], ids=str
)
def test_torch_free_dcp_to_dcp_writes_the_bytes_of_the_torch_path(tmp_path: Path, src_dcp: Path, layout):
    light, heavy = tmp_path / "light.dcp", tmp_path / "torch.dcp"
    convert(src_dcp, light, "dcp", layout, torch_free=True, durable=False)
    convert(src_dcp, heavy, "dcp", layout, torch_free=False, durable=False)
    _same_bytes(light, heavy)
    assert verify(light).ok
    assert compare(src_dcp, light).ok


def test_torch_free_dcp_to_hf_writes_the_bytes_of_the_torch_path(tmp_path: Path, src_dcp: Path):
    light, heavy = tmp_path / "light_hf", tmp_path / "torch_hf"
    convert(src_dcp, light, "hf", torch_free=True, durable=False, writer_options={"max_shard_bytes": 20_000})
    convert(src_dcp, heavy, "hf", torch_free=False, durable=False, writer_options={"max_shard_bytes": 20_000})
    assert len(list(light.glob("*.safetensors"))) > 1
    _same_bytes(light, heavy)
    assert compare(src_dcp, light).ok


def test_torch_free_metadata_beyond_one_pickle_frame(tmp_path: Path, write_dcp):
    """700 tensors of three dtypes, and entries: a .metadata over 64 KiB, so several pickle frames."""
    model = {
        f"layers.{i}.w": torch.full((2, 3), i, dtype=(torch.bfloat16, torch.int32, torch.bool)[i % 3])
        for i in range(700)
    }
    src = write_dcp({"model": model, "train": {"step": 3, "note": "x"}}, tmp_path / "src.dcp")
    light, heavy = tmp_path / "light.dcp", tmp_path / "torch.dcp"
    convert(src, light, "dcp", ParallelLayout(dp=2, fsdp=True), torch_free=True, durable=False)
    convert(src, heavy, "dcp", ParallelLayout(dp=2, fsdp=True), torch_free=False, durable=False)
    assert (light / ".metadata").stat().st_size > 64 << 10
    _same_bytes(light, heavy)


@pytest.mark.parametrize(
    "shape", [(64, 16), (3, 5), (), (7,), (2, 3, 4, 5), (300, 7000), (1, 2, 1, 2, 1, 2, 1)], ids=str
)
def test_skeleton_is_torch_saves_archive(shape):
    for name, light in DTYPES.items():
        if name.startswith("float8"):
            continue
        with torch.serialization.skip_data():
            expected = io.BytesIO(b"prefix")
            expected.seek(0, io.SEEK_END)
            torch.save(torch.empty(shape, dtype=getattr(torch, name)), expected)
        got = io.BytesIO(b"prefix")
        got.seek(0, io.SEEK_END)
        write_skeleton(got, shape, light)
        assert got.getvalue() == expected.getvalue(), (shape, name)


def test_what_only_torch_writes_falls_back_to_torch(tmp_path: Path, src_dcp: Path, write_dcp):
    """Empty and fp8 archives are torch's own to lay out; TP cuts along dim 1 move rows, with torch."""
    for shape, dtype in [((0, 4), DTYPES["float32"]), ((4,), DTYPES["float8_e4m3fn"])]:
        with pytest.raises(NeedsTorch):
            write_skeleton(io.BytesIO(), shape, dtype)
    src = write_dcp({"model": {"w": torch.randn(4, 6), "empty": torch.empty(0, 3)}}, tmp_path / "empty.dcp")
    with pytest.raises(ReshapeError, match="without torch"):
        convert(src, tmp_path / "no.dcp", "dcp", torch_free=True)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["empty.dcp", "src.dcp"]
    light, heavy = tmp_path / "light.dcp", tmp_path / "torch.dcp"
    convert(src, light, "dcp", durable=False)  # default: tries without torch, then converts with it
    convert(src, heavy, "dcp", durable=False, torch_free=False)
    _same_bytes(light, heavy)
    with pytest.raises(ReshapeError, match="without torch"):
        convert(src_dcp, tmp_path / "z", "zarr", torch_free=True)


def test_light_metadata_reads_as_torchs(src_dcp: Path):
    light = dcp_light.read_metadata(src_dcp)
    with open(src_dcp / ".metadata", "rb") as stream:
        heavy = pickle.load(stream)
    assert list(light.state_dict_metadata) == list(heavy.state_dict_metadata)
    for key, item in heavy.state_dict_metadata.items():
        if hasattr(item, "size"):
            assert tuple(light.state_dict_metadata[key].size) == tuple(item.size)
            assert str(light.state_dict_metadata[key].properties.dtype) == str(item.properties.dtype)
    assert len(light.storage_data) == len(heavy.storage_data)


_NO_TORCH = """
import sys
from zaya_cli.app import main
sys.argv = ["zaya", "ckpt", "convert", *sys.argv[1:]]
try:
    main()
except SystemExit as exit:
    assert not exit.code, exit.code
print("imported:", sorted(m for m in ("torch", "numpy", "zarr", "safetensors") if m in sys.modules))
"""


@pytest.mark.parametrize("to", ["dcp", "hf"])
def test_zaya_ckpt_convert_from_dcp_imports_no_torch(tmp_path: Path, src_dcp: Path, to: str):
    """In a fresh process, `zaya ckpt convert` of a DCP folder to DCP (reshaped) or HF imports neither torch nor
    numpy."""
    out = tmp_path / f"ep4.{to}"
    args = [str(src_dcp), str(out), "--to", to, "--layout", "dp=4,ep=4,fsdp=1", "--quiet", "--no-fsync"]
    run = subprocess.run([sys.executable, "-c", _NO_TORCH, *args], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert "imported: []" in run.stdout, run.stdout
    assert compare(src_dcp, out).ok


def test_many_pieces_go_to_torchs_faster_pickler(tmp_path: Path, src_dcp: Path, monkeypatch):
    monkeypatch.setattr(sys.modules["ckpt_reshape.convert"], "LIGHT_MAX_PIECES", 10)
    with pytest.raises(ReshapeError, match="pieces"):
        convert(src_dcp, tmp_path / "no.dcp", "dcp", torch_free=True)
    light, heavy = tmp_path / "light.dcp", tmp_path / "torch.dcp"
    convert(src_dcp, light, "dcp", durable=False)
    convert(src_dcp, heavy, "dcp", durable=False, torch_free=False)
    _same_bytes(light, heavy)
