"""Megatron-Core `torch_dist` checkpoints, written by megatron-core on 2 gloo ranks (TP 2, PP 2, EP 2): read
as megatron itself loads them, reshaped into our layouts and formats, and written back so that megatron's own
`dist_checkpointing.load` reads the same values, bit for bit."""

import shutil
from pathlib import Path

import pytest
import torch
from ckpt_reshape import ParallelLayout, ReshapeError, compare, convert, open_checkpoint
from ckpt_reshape.megatron_names import logical_name

pytest.importorskip("megatron.core")
LAYOUTS = ["tp2", "pp2", "ep2"]


def _logical(reference: dict) -> dict[str, torch.Tensor]:
    """megatron's loaded global tensors under logical names (one per layer of a stacked key)."""
    out = {}
    for key, tensor in reference.items():
        if key.startswith("decoder.layers."):
            out.update({logical_name(key, i): tensor[i] for i in range(tensor.shape[0])})
        else:
            out[logical_name(key, None)] = tensor
    return out


@pytest.mark.parametrize("layout", LAYOUTS)
def test_megatron_checkpoint_reads_as_megatron_loads_it(megatron_dir: Path, layout: str, tmp_path: Path):
    reference = _logical(torch.load(megatron_dir / f"{layout}.reference.pt", weights_only=True))
    dst = tmp_path / "ours.dcp"
    result = convert(megatron_dir / layout, dst, "dcp", ParallelLayout(dp=2, ep=2, fsdp=True))
    assert result.tensors > len(reference)  # the weights plus Adam's two moments of each
    with open_checkpoint(dst) as ours:
        assert {n for n in ours.index.tensors if n.startswith("model.")} == set(reference)
        assert "optim.state.decoder.layers.1.mlp.experts.experts.linear_fc1.weight.exp_avg_sq" in ours.index.tensors
        for name, tensor in reference.items():
            assert torch.equal(ours.read_tensor(name), tensor), name
        experts = ours.index.tensors["model.decoder.layers.0.mlp.experts.experts.linear_fc1.weight"]
        assert experts.shape == (4, 96, 32)  # global expert ids on dim 0, gate | up on dim 1
    # common.pt travels byte for byte (Megatron-LM's argparse Namespace in it is compared without unpickling)
    report = compare(megatron_dir / layout, dst)
    assert report.ok and report.checked_objects >= 1 + 2 * 4, report.problems


def test_megatron_layouts_are_one_logical_checkpoint(megatron_dir: Path):
    """TP 2, PP 2 and EP 2 of the same seeded model compare equal tensor for tensor (Adam's state included)."""
    report = compare(megatron_dir / "tp2", megatron_dir / "ep2")
    assert report.ok, report.problems
    assert compare(megatron_dir / "pp2", megatron_dir / "tp2").ok


@pytest.mark.slow
def test_megatron_to_ours_to_hf_to_megatron_is_bitwise(megatron_dir: Path, megatron_writer, tmp_path: Path):
    """Megatron (TP 2) -> our DCP (dp=2, ep=2, FSDP) -> HF safetensors -> Megatron, loaded by megatron itself."""
    from megatron.core import parallel_state
    from strict_devices import one_rank_group

    ours, hf, back = tmp_path / "ours.dcp", tmp_path / "hf", tmp_path / "megatron"
    convert(megatron_dir / "tp2", ours, "dcp", ParallelLayout(dp=2, ep=2, fsdp=True))
    convert(ours, hf, "hf")
    result = convert(hf, back, "megatron", ParallelLayout(dp=2, ep=2))  # experts in two ranks' files
    assert (back / "metadata.json").is_file() and (back / "common.pt").is_file()
    assert compare(megatron_dir / "tp2", back).ok  # HF carries weights only: the rest is noted, not a problem
    with one_rank_group(tmp_path):
        parallel_state.initialize_model_parallel(1, 1)
        try:
            loaded = megatron_writer.load_reference(back)
        finally:
            parallel_state.destroy_model_parallel()
    reference = torch.load(megatron_dir / "tp2.reference.pt", weights_only=True)
    assert set(loaded) == set(reference) and result.tensors == len(_logical(reference))
    for key, tensor in reference.items():
        assert torch.equal(loaded[key], tensor), key


def test_distributed_optimizer_state_is_refused_by_name(megatron_dir: Path, tmp_path: Path):
    """`zaya ckpt convert` detects the format, refuses in one line, writes nothing; --model-only converts."""
    from ckpt_reshape.cli import app
    from typer.testing import CliRunner

    done = CliRunner().invoke(app, ["convert", str(megatron_dir / "distopt"), str(tmp_path / "out"), "--to", "dcp"])
    assert done.exit_code == 2 and "optimizer state not converted, use --model-only" in done.output
    assert "optimizer.distributed.dp_group_idx_" in done.output and len(done.output.strip().splitlines()) == 1
    assert not (tmp_path / "out").exists()
    result = convert(megatron_dir / "distopt", tmp_path / "out", "dcp", model_only=True)
    assert result.tensors == len(_logical(torch.load(megatron_dir / "tp2.reference.pt", weights_only=True)))


def test_megatron_writer_refuses_a_tensor_with_no_megatron_key(write_dcp, tmp_path: Path):
    """A tensor outside model.* and optim.state.* has no Megatron key: one line, nothing at the destination."""
    state = {"model": {"decoder.final_layernorm.weight": torch.ones(4)}, "ema": {"decay": torch.ones(4)}}
    src = write_dcp(state, tmp_path / "src.dcp")
    with pytest.raises(ReshapeError, match=r"'ema\.decay' .* has no Megatron key") as err:
        convert(src, tmp_path / "m", "megatron")
    assert "\n" not in str(err.value) and not (tmp_path / "m").exists()
    assert not list(tmp_path.glob(".tmp*"))


def test_a_megatron_save_folder_stands_for_its_latest_iteration(megatron_dir: Path, tmp_path: Path):
    """`latest_checkpointed_iteration.txt` picks `iter_<7 digits>/`, as megatron's loader does; a bad one is a line."""
    from ckpt_reshape.cli import app
    from typer.testing import CliRunner

    root = tmp_path / "save"
    shutil.copytree(megatron_dir / "ep2", root / "iter_0000003")
    (root / "latest_checkpointed_iteration.txt").write_text("3\n")
    with open_checkpoint(root) as reader:
        assert reader.format_name == "megatron" and reader.path.name == "iter_0000003"
    (root / "latest_checkpointed_iteration.txt").write_text("7\n")
    done = CliRunner().invoke(app, ["convert", str(root), str(tmp_path / "out"), "--to", "dcp", "--quiet"])
    assert done.exit_code == 2 and "names iteration 7, but" in done.output and "iter_0000007" in done.output
    assert len(done.output.strip().splitlines()) == 1 and not (tmp_path / "out").exists()


def test_a_megatron_layer_stack_with_a_hole_is_refused(write_dcp, tmp_path: Path):
    """Megatron stores a layer tensor stacked over every layer: layers 0 and 2 without 1 cannot be one."""
    layers = {f"decoder.layers.{i}.mlp.router.weight": torch.ones(4, 8) for i in (0, 2)}
    src = write_dcp({"model": layers}, tmp_path / "src.dcp")
    with pytest.raises(ReshapeError, match=r"'decoder\.layers\.mlp\.router\.weight': layers \[1\] are missing"):
        convert(src, tmp_path / "m", "megatron")
    assert not (tmp_path / "m").exists()


@pytest.mark.slow
@pytest.mark.distributed
def test_megatron_loads_our_output_at_every_layout(megatron_dir: Path, megatron_launch, tmp_path: Path):
    """Megatron (TP 2) -> our DCP -> HF -> Megatron (written as 2 ranks' files), loaded by megatron on 2 gloo
    ranks at TP 2, PP 2 and EP 2: every rank holds what loading megatron's own TP 2 checkpoint there gives it,
    tensor for tensor (megatron compares; the launch is cached by the converted files' content)."""
    import importlib.metadata
    import json
    import sys

    from artifact_cache import cached_artifact, content_hash

    ours, hf, back = tmp_path / "ours.dcp", tmp_path / "hf", tmp_path / "megatron"
    convert(megatron_dir / "tp2", ours, "dcp", ParallelLayout(dp=2, ep=2, fsdp=True))
    convert(ours, hf, "hf")
    convert(hf, back, "megatron", ParallelLayout(dp=2, ep=2))
    files = [p for p in sorted(back.iterdir()) if p.name != "ckpt-reshape.json"]  # the sidecar names tmp paths
    writer = Path(__file__).with_name("megatron_writer.py")
    contents = [p.name.encode() + b"\0" + p.read_bytes() for p in files]  # not their tmp paths
    key = content_hash(*contents, writer, importlib.metadata.version("megatron-core"), sys.version)
    args = ["--verify", str(back), "--original", str(megatron_dir / "tp2")]
    done = cached_artifact("ckpt-reshape-megatron-reload", key, lambda out: megatron_launch(*args, "--out", str(out)))
    result = json.loads((done / "verify.json").read_text())
    assert set(result) == {"tp2", "pp2", "ep2"}
    for layout, found in result.items():
        assert found["compared"] >= 20 and found["mismatched"] == [], layout


def test_megatron_tp2_layout_cuts_every_tensor_as_megatron_does(megatron_dir: Path, tmp_path: Path):
    """Megatron's EP 2 checkpoint written back as Megatron at --layout tp=2 cuts each tensor where megatron's own
    TP 2 checkpoint of the model does (chunk offsets and sizes; megatron's sequential experts are one chunk per
    expert, so the expert axis is left out): QKV by whole query groups, fc1's gate and up halves, the
    row-parallel projections, the vocabulary (the split table from common.pt's args)."""
    from ckpt_reshape.formats.megatron import megatron_metadata_global
    from zaya_config.safe_pickle import load_restricted

    out = tmp_path / "tp2"
    convert(megatron_dir / "ep2", out, "megatron", ParallelLayout(tp=2), model_only=True)

    def cuts(folder: Path) -> dict[str, set]:
        meta = load_restricted((folder / ".metadata").read_bytes(), megatron_metadata_global, folder, "metadata")
        found = {}
        for key, item in meta.state_dict_metadata.items():
            if hasattr(item, "chunks") and not key.startswith("optimizer."):
                keep = [d for d in range(len(item.size)) if not (".experts." in key and d == 1)]
                found[key] = {tuple((c.offsets[d], c.sizes[d]) for d in keep) for c in item.chunks}
        return found

    ours, theirs = cuts(out), cuts(megatron_dir / "tp2")
    assert ours.keys() == theirs.keys()
    for key in theirs:
        assert ours[key] == theirs[key], key
    assert len(theirs["decoder.layers.self_attention.linear_qkv.weight"]) == 2 * 2  # 2 layers x 2 TP ranks
