"""torchtitan 0.3 checkpoints: one written by torchtitan itself (tests/torchtitan_writer.py, committed under
tests/data/torchtitan/ because torchtitan 0.3.0 does not install into this workspace: it requires
datasets<4.8.0) is read as torchtitan itself loads it, reshaped into our layouts, and written back in
torchtitan's form, which DCP loads into torchtitan's state-dict structure with the same values, bit for bit."""

import shutil
import warnings
from pathlib import Path

import pytest
import torch
import torch.distributed.checkpoint as dcp
from ckpt_reshape import ParallelLayout, compare, convert, open_checkpoint
from ckpt_reshape.formats import detect_format
from zaya_config.train_checkpoint.dcp_metadata import safe_reader

DATA = Path(__file__).with_name("data") / "torchtitan"
STEP = DATA / "checkpoint" / "step-1"
EXPERTS = "layers.1.moe.routed_experts.inner_experts.w1_EFD"


@pytest.fixture(scope="module")
def reference() -> dict:
    """What torchtitan's CheckpointManager.load restored from STEP (model and flat optimizer state)."""
    return torch.load(DATA / "reference.pt", weights_only=True)


def _expect(reference: dict) -> dict[str, torch.Tensor]:
    """torchtitan's loaded state under logical names."""
    out = {f"model.{k}": v for k, v in reference["model"].items()}
    out.update({f"optim.{k}": v for k, v in reference["optimizer"].items()})
    return out


def test_torchtitan_checkpoint_reads_as_torchtitan_loads_it(reference: dict, tmp_path: Path):
    assert detect_format(STEP) == "torchtitan"
    ours = tmp_path / "ours.dcp"
    convert(STEP, ours, "dcp", ParallelLayout(dp=2, ep=2, fsdp=True))
    expected = _expect(reference)
    with open_checkpoint(ours) as reader:
        assert set(expected) <= set(reader.index.tensors)
        for name, tensor in expected.items():
            assert torch.equal(reader.read_tensor(name), tensor), name
        assert "train.lr_scheduler.last_epoch" in reader.index.objects
        # experts by global expert id: each EP rank's file holds its own range of dim 0
        chunks = reader.metadata.state_dict_metadata[f"model.{EXPERTS}"].chunks
        assert sorted(c.offsets[0] for c in chunks) == [0, 2]


def test_ours_to_torchtitan_loads_into_torchtitans_structure(reference: dict, tmp_path: Path):
    """torchtitan -> our DCP (dp=2, ep=2) -> torchtitan: DCP loads `{**model, "optimizer": {...}}` (torchtitan's
    own `dcp.load` structure) with every value equal to what torchtitan loaded from its own checkpoint."""
    ours, back = tmp_path / "ours.dcp", tmp_path / "root" / "checkpoint" / "step-1"
    convert(STEP, ours, "dcp", ParallelLayout(dp=2, ep=2, fsdp=True))
    back.parent.mkdir(parents=True)
    convert(ours, back, "torchtitan", ParallelLayout(dp=2, ep=2, fsdp=True))
    assert detect_format(back) == "torchtitan" and compare(STEP, back).ok
    state = {k: torch.empty_like(v) for k, v in reference["model"].items()}
    state["optimizer"] = {k: torch.empty_like(v) for k, v in reference["optimizer"].items()}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        dcp.load(state, storage_reader=safe_reader(back), no_dist=True)
    for key, tensor in reference["model"].items():
        assert torch.equal(state[key], tensor), key
    for key, tensor in reference["optimizer"].items():
        assert torch.equal(state["optimizer"][key], tensor), key


def test_torchtitan_itself_loads_what_we_write(reference: dict, tmp_path: Path):
    """Where torchtitan is importable (not in this workspace: see the module docstring), its CheckpointManager
    loads our torchtitan output to the same values."""
    pytest.importorskip("torchtitan")
    import importlib.util

    spec = importlib.util.spec_from_file_location("torchtitan_writer", Path(__file__).with_name("torchtitan_writer.py"))
    writer = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(writer)
    from strict_devices import one_rank_group

    root = tmp_path / "root"
    (root / "checkpoint").mkdir(parents=True)
    convert(STEP, tmp_path / "ours.dcp", "dcp", ParallelLayout(dp=2, ep=2, fsdp=True))
    convert(tmp_path / "ours.dcp", root / "checkpoint" / "step-1", "torchtitan")
    with one_rank_group(tmp_path):
        loaded = writer.loaded_state(root)
    for part in ("model", "optimizer"):
        assert set(loaded[part]) == set(reference[part])
        assert all(torch.equal(loaded[part][k], v) for k, v in reference[part].items())
    shutil.rmtree(root)


def test_torchtitans_checkpoint_folder_stands_for_its_newest_step(tmp_path: Path):
    """`checkpoint/` with `step-<N>/` folders opens its newest step, the one torchtitan resumes from."""
    folder = tmp_path / "checkpoint"
    shutil.copytree(STEP, folder / "step-10")
    shutil.copytree(STEP, folder / "step-9")
    with open_checkpoint(folder) as reader:
        assert reader.format_name == "torchtitan" and reader.path.name == "step-10"
