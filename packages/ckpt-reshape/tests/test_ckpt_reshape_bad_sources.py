"""Bad Megatron and torchtitan sources (from the libraries' own checkpoints): a truncated shard, a `.metadata`
naming a shard that is not there, a tensor the target's name mapping cannot place. Each stops `zaya ckpt
convert` with one line naming the file or tensor, and nothing appears at the destination."""

import shutil
from pathlib import Path

import pytest
import torch
from ckpt_reshape.cli import app
from typer.testing import CliRunner

TORCHTITAN = Path(__file__).with_name("data") / "torchtitan" / "checkpoint" / "step-1"


@pytest.fixture(params=["megatron", "torchtitan"])
def source(request, tmp_path: Path) -> Path:
    """A copy of a checkpoint the library wrote (megatron-core's TP 2 one, torchtitan's step folder)."""
    folder = request.getfixturevalue("megatron_dir") / "tp2" if request.param == "megatron" else TORCHTITAN
    copy = tmp_path / ("src" if request.param == "megatron" else "step-1")
    shutil.copytree(folder, copy)
    return copy


def _convert_fails(src: Path, dst: Path, *extra: str) -> str:
    """Run `zaya ckpt convert` (its typer app); the one line it fails with, after checking nothing was written."""
    done = CliRunner().invoke(app, ["convert", str(src), str(dst), "--to", "dcp", "--quiet", *extra])
    assert done.exit_code == 2, done.output
    assert not dst.exists() and not list(dst.parent.glob(f".tmp.{dst.name}*"))
    lines = done.output.strip().splitlines()
    assert len(lines) == 1, done.output
    return lines[0]


def test_a_truncated_shard_is_named(source: Path, tmp_path: Path):
    shard = max(source.glob("__*.distcp"), key=lambda p: p.stat().st_size)
    with open(shard, "r+b") as stream:
        stream.truncate(shard.stat().st_size // 2)
    line = _convert_fails(source, tmp_path / "out.dcp")
    assert shard.name in line and "truncated" in line


def test_a_missing_shard_is_named(source: Path, tmp_path: Path):
    shard = sorted(source.glob("__*.distcp"))[-1]
    shard.unlink()
    line = _convert_fails(source, tmp_path / "out.dcp")
    assert shard.name in line and "shard file missing" in line


@pytest.mark.parametrize("to", ["megatron", "torchtitan"])
def test_a_tensor_the_mapping_cannot_place_is_named(write_dcp, tmp_path: Path, to: str):
    state = {"model": {"norm.weight": torch.ones(4)}, "ema": {"norm.weight": torch.ones(4)}}
    src = write_dcp(state, tmp_path / "src.dcp")
    dst = tmp_path / "out"
    done = CliRunner().invoke(app, ["convert", str(src), str(dst), "--to", to, "--quiet"])
    assert done.exit_code == 2 and "'ema.norm.weight'" in done.output
    assert f"has no {'Megatron' if to == 'megatron' else 'torchtitan'} key" in done.output
    assert len(done.output.strip().splitlines()) == 1 and not dst.exists()
