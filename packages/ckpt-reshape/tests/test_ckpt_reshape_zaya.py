"""ZAYA checkpoints: zaya-model's parallel plan drives TP/EP reshapes, and an HF export (fused qkv split into
HF's four projections) loads in transformers' ZayaForCausalLM with zaya-model's logits."""

import json
import struct
from pathlib import Path

import pytest
import torch
from ckpt_reshape.convert import convert
from ckpt_reshape.errors import ReshapeError
from ckpt_reshape.formats import open_checkpoint
from ckpt_reshape.layout import ParallelLayout
from ckpt_reshape.verify import compare, summarize_entries

zaya_model = pytest.importorskip("zaya_model")


@pytest.fixture
def tiny(tmp_path: Path, write_dcp):
    cfg = zaya_model.ZayaConfig.from_preset("zaya1-tiny")
    torch.manual_seed(0)
    model = zaya_model.build_model(cfg)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.randn_like(p) * 0.1)
    model.eval()
    return cfg, model, write_dcp({"model": model.state_dict()}, tmp_path / "tiny.dcp")


def test_tp_ep_reshape_uses_the_plan_and_splits_sections(tmp_path: Path, tiny):
    src = tiny[2]
    out = tmp_path / "tp2.dcp"
    convert(src, out, "dcp", ParallelLayout(dp=2, tp=2, ep=2, fsdp=True), model_config="zaya1-tiny")
    assert compare(src, out).ok
    with open_checkpoint(out) as reader:
        chunks = reader.metadata.state_dict_metadata["model.layers.0.attn.qkv.weight"].chunks
    # each TP rank holds half of every q | k | v section (64 local rows: 32 q, 16 k, 16 v); FSDP halves those
    # rows, so one FSDP shard is the q half and the other the k and v halves: 2 TP x (1 + 2) rectangles
    assert len(chunks) == 6
    assert sorted(c.offsets[0] for c in chunks) == [0, 32, 64, 80, 96, 112]
    with pytest.raises(ReshapeError, match="cannot be split 4 ways"):  # tp must divide the 2 KV heads
        convert(src, tmp_path / "tp4.dcp", "dcp", ParallelLayout(tp=4), model_config="zaya1-tiny")
    assert not (tmp_path / "tp4.dcp").exists()


def test_hf_export_loads_in_transformers_with_the_same_logits(tmp_path: Path, tiny):
    transformers_zaya = pytest.importorskip("transformers.models.zaya")
    cfg, model, src = tiny
    reshaped = tmp_path / "r.dcp"
    convert(src, reshaped, "dcp", ParallelLayout(dp=2, tp=2, ep=2), model_config="zaya1-tiny")
    hf = tmp_path / "hf"
    result = convert(reshaped, hf, "hf")  # the model config travels in the sidecar
    assert any("bias_first_moment" in d for d in result.dropped)  # ours-only buffers are not HF's
    reference = transformers_zaya.ZayaForCausalLM.from_pretrained(hf).eval()
    ids = torch.randint(0, cfg.vocab_size, (2, 11), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        ours, theirs = model(ids), reference(ids).logits
    assert (ours - theirs).abs().max().item() <= 1e-5
    again = zaya_model.load_hf(hf).eval()
    with torch.no_grad():
        assert torch.equal(again(ids), ours)
    back = tmp_path / "back.dcp"
    convert(hf, back, "dcp")
    report = compare(src, back)
    assert {p.split("'")[1] for p in report.problems} <= {d for d in result.dropped}


def _flip_first_tensor(hf: Path) -> str:
    """XOR the first bytes of the first tensor in the HF shard; returns its HF key."""
    shard = hf / "model.safetensors"
    data = bytearray(shard.read_bytes())
    (length,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8 : 8 + length])
    key = min((k for k in header if k != "__metadata__"), key=lambda k: header[k]["data_offsets"][0])
    at = 8 + length + header[key]["data_offsets"][0]
    data[at : at + 4] = bytes(b ^ 0xFF for b in data[at : at + 4])
    shard.write_bytes(bytes(data))
    return key


def test_hf_export_of_a_run_verifies_with_a_note_and_catches_a_changed_value(tmp_path: Path, tiny):
    yaml = pytest.importorskip("yaml")
    cfg, _, src = tiny
    checkpoints = tmp_path / "run" / "checkpoints"  # a zaya-train run dir: config.yaml beside checkpoints/
    checkpoints.mkdir(parents=True)
    src.rename(checkpoints / "step_00000001")
    (checkpoints / "latest").write_text("step_00000001\n")
    (tmp_path / "run" / "config.yaml").write_text(yaml.safe_dump({"model": cfg.to_dict(), "train": {"steps": 1}}))
    hf = tmp_path / "hf"
    result = convert(checkpoints, hf, "hf")  # no --model-config: the run's config.yaml supplies it
    assert "model.lm_head.weight" in result.dropped and any("bias_steps" in d for d in result.dropped)
    report = compare(checkpoints, hf)
    assert report.ok, report.problems
    assert any(
        summarize_entries(result.dropped) in note and note.startswith("not carried by hf") for note in report.notes
    )
    assert report.checked_tensors == result.tensors - len(result.dropped)

    hf_key = _flip_first_tensor(hf)
    with open_checkpoint(hf) as reader:
        (logical,) = [
            n for n, m in reader.index.tensors.items() if hf_key in {p.hf for p in reader.key_map.parts(n[6:], m.shape)}
        ]
    broken = compare(checkpoints, hf)
    assert not broken.ok and len(broken.problems) == 1
    assert f"{logical!r}: bytes differ" in broken.problems[0]


def test_hf_export_of_a_run_carries_the_phase_theta_and_the_tokenizer_eos(tmp_path: Path, tiny):
    """zaya-train switches RoPE theta per recipe phase and trains with its own tokenizer's EOS: the export of a
    checkpoint taken in the second phase must say theta 1e5 and EOS 256, not the preset's 1e4 and 106."""
    import pickle

    yaml = pytest.importorskip("yaml")
    cfg, model, src = tiny
    run = tmp_path / "run"
    step = run / "checkpoints" / "step_00000040"
    step.parent.mkdir(parents=True)
    src.rename(step)
    (step / "train-rank00000.pkl").write_bytes(pickle.dumps({"progress": {"step": 40, "tokens": 9, "phase": 1}}))
    (run / "checkpoints" / "latest").write_text("step_00000040\n")
    phases = [{"name": "short", "rope_theta": 1e4}, {"name": "long", "rope_theta": 1e5}]
    (run / "config.yaml").write_text(yaml.safe_dump({"model": cfg.to_dict(), "recipe": {"phases": phases}}))
    (run / "tokenizer").mkdir()
    (run / "tokenizer" / "tokenizer_config.json").write_text(
        json.dumps({"zaya_tokenizer": {"kind": "byte", "eos_id": 256}})
    )
    for source in (run / "checkpoints", step):  # the run's checkpoints/ (latest) or one step folder
        hf = tmp_path / f"hf-{source.name}"
        convert(source, hf, "hf")
        config = json.loads((hf / "config.json").read_text())
        assert config["rope_parameters"]["hybrid"]["rope_theta"] == 1e5
        assert config["eos_token_id"] == config["bos_token_id"] == config["pad_token_id"] == 256
    model.set_rope_theta(1e5)
    ids = torch.randint(0, cfg.vocab_size, (1, 12), generator=torch.Generator().manual_seed(3))
    with torch.no_grad():
        assert torch.equal(zaya_model.load_hf(hf).eval()(ids), model(ids))  # the model as it was being trained
