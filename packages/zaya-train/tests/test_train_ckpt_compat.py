"""Checkpoints written before the layout and manifest moved to zaya-config still load, byte for byte.

`data/checkpoint_root_v1` was written by zaya-train's CheckpointManager as it was before the move
(commit be35d61): two steps of a {"model": {"weight", "bias"}, "train": {...}} state, `keep_last=2`.
"""

import shutil
from pathlib import Path

import pytest
import torch
from zaya_train.checkpoint import CheckpointManager, CorruptCheckpointWarning

V1_ROOT = Path(__file__).parent / "data" / "checkpoint_root_v1"


def _expected(step: int) -> dict[str, torch.Tensor]:
    weight = torch.randn(3, 4, generator=torch.Generator().manual_seed(0))
    return {"weight": weight * step, "bias": torch.arange(3, dtype=torch.float32) + step}


def _empty_state() -> dict:
    return {"model": {"weight": torch.zeros(3, 4), "bias": torch.zeros(3)}, "train": {}}


def test_a_v1_checkpoint_root_loads_its_latest_step(tmp_path: Path) -> None:
    root = shutil.copytree(V1_ROOT, tmp_path / "ckpt")
    state = _empty_state()
    assert CheckpointManager(root).load_latest(state) == 2
    assert state["train"] == {"step": 2, "tokens": 128}
    for name, tensor in _expected(2).items():
        assert torch.equal(state["model"][name], tensor), name


def test_a_v1_manifest_still_catches_a_damaged_shard(tmp_path: Path) -> None:
    root = shutil.copytree(V1_ROOT, tmp_path / "ckpt")
    shard = root / "step_00000002" / "__0_0.distcp"
    data = bytearray(shard.read_bytes())
    data[len(data) // 2] ^= 0xFF
    shard.write_bytes(bytes(data))
    state = _empty_state()
    with pytest.warns(CorruptCheckpointWarning, match="__0_0.distcp"):
        assert CheckpointManager(root).load_latest(state) == 1
    assert torch.equal(state["model"]["weight"], _expected(1)["weight"])


def test_saving_on_top_of_a_v1_root_keeps_its_layout(tmp_path: Path) -> None:
    root = shutil.copytree(V1_ROOT, tmp_path / "ckpt")
    CheckpointManager(root, keep_last=2).save(3, {"model": _expected(3), "train": {"step": 3}})
    assert sorted(p.name for p in root.iterdir()) == ["latest", "step_00000002", "step_00000003"]
    assert (root / "latest").read_text(encoding="utf-8") == "step_00000003\n"
    old = (V1_ROOT / "step_00000002" / "manifest.json").read_text(encoding="utf-8")
    new = (root / "step_00000003" / "manifest.json").read_text(encoding="utf-8")
    assert [line.split(":")[0] for line in new.splitlines()] == [line.split(":")[0] for line in old.splitlines()]
