"""A zaya-train step folder's `trained_model.json` is the model config of its export (no config.yaml needed);
nothing a checkpoint holds is unpickled with the plain unpickler; without the `zaya` extra a ZAYA checkpoint
stops with one line naming the install."""

import json
import sys
from pathlib import Path

import pytest
import torch
from ckpt_reshape.convert import convert
from ckpt_reshape.errors import ReshapeError
from ckpt_reshape.formats import open_checkpoint
from ckpt_reshape.layout import ParallelLayout
from ckpt_reshape.objects import load_object
from ckpt_reshape.verify import compare
from hostile_pickle import hostile_pickle
from zaya_config.train_checkpoint.trained_model import TrainedModel, write_trained_model

zaya_model = pytest.importorskip("zaya_model")


@pytest.fixture
def tiny_step(tmp_path: Path, write_dcp):
    """A zaya-train step folder of zaya1-tiny outside any run dir (train.checkpoint.dir elsewhere)."""
    cfg = zaya_model.ZayaConfig.from_preset("zaya1-tiny")
    torch.manual_seed(0)
    model = zaya_model.build_model(cfg).eval()
    return cfg, model, write_dcp({"model": model.state_dict()}, tmp_path / "elsewhere" / "step_00000008")


def test_the_step_folders_trained_model_is_the_exports_config(tmp_path: Path, tiny_step):
    cfg, model, step = tiny_step
    record = TrainedModel(
        step=8, model=cfg.replace(rope_theta=2e5).to_dict(), tokenizer={"eos_id": 256}, phase={"index": 1}
    )
    write_trained_model(step, record)
    convert(step, tmp_path / "hf", "hf")  # no --model-config and no config.yaml: the step folder says it
    config = json.loads((tmp_path / "hf" / "config.json").read_text())
    assert config["rope_parameters"]["hybrid"]["rope_theta"] == 2e5
    assert config["eos_token_id"] == config["bos_token_id"] == config["pad_token_id"] == 256
    model.set_rope_theta(2e5)
    ids = torch.randint(0, cfg.vocab_size, (1, 9), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        assert torch.equal(zaya_model.load_hf(tmp_path / "hf").eval()(ids), model(ids))


def test_hostile_pickles_are_refused_in_one_line(tmp_path: Path, tiny_step):
    step = tiny_step[2]
    (step / ".metadata").write_bytes(hostile_pickle(tmp_path / "pwned"))
    with pytest.raises(ReshapeError, match=r"\.metadata: cannot read DCP metadata .*references (posix|os)\.mkdir"):
        open_checkpoint(step)
    payload = hostile_pickle(tmp_path / "pwned", protocol=2)
    with pytest.raises(ReshapeError, match=r"entry 'optim.x' is not plain data .*weights_only=True\) only") as err:
        load_object(payload, "optim.x")
    assert "\n" not in str(err.value) and not (tmp_path / "pwned").exists()
    import io

    buffer = io.BytesIO()
    torch.save({"lr": 0.1, "groups": [1, 2]}, buffer)
    assert load_object(buffer.getvalue(), "optim.param_groups") == {"lr": 0.1, "groups": [1, 2]}


def test_without_the_zaya_extra_a_zaya_checkpoint_names_the_install(tmp_path: Path, tiny_step, monkeypatch, write_dcp):
    monkeypatch.setitem(sys.modules, "zaya_model", None)  # as if ckpt-reshape were installed without [zaya]
    monkeypatch.setitem(sys.modules, "zaya_model.parallel", None)
    with pytest.raises(
        ReshapeError, match=r"needs zaya-model, which is not installed; install ckpt-reshape\[zaya\]"
    ) as err:
        convert(tiny_step[2], tmp_path / "tp2.dcp", "dcp")
    assert "\n" not in str(err.value)
    assert not (tmp_path / "tp2.dcp").exists()
    other = write_dcp({"model": {"embed.weight": torch.ones(4, 2), "mlp.experts.w": torch.ones(4, 3)}}, tmp_path / "o")
    convert(other, tmp_path / "o4.dcp", "dcp", ParallelLayout(dp=4, ep=4, fsdp=True))  # another model: no extra
    convert(tmp_path / "o4.dcp", tmp_path / "o.hf", "hf")
    assert compare(other, tmp_path / "o.hf").ok
