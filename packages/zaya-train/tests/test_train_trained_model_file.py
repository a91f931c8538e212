"""Every checkpoint step folder holds the model as trained (`trained_model.json`, in the manifest), and the
one run loader gives the same model from it as from a run saved before the file existed."""

import json
import shutil
from pathlib import Path

import torch
from hostile_pickle import MakesADir
from zaya_config.train_checkpoint.layout import TRAINED_MODEL_NAME, step_dirs
from zaya_config.train_checkpoint.manifest import read_manifest, verify_manifest, write_manifest
from zaya_config.train_checkpoint.trained_model import read_trained_model
from zaya_train.trained_run import load_run


def test_each_step_folder_records_its_phase_theta_context_and_tokenizer(eval_run: Path) -> None:
    expected = {16: (0, "short", 64, 1e4), 32: (1, "long", 128, 1e5)}
    for step, folder in sorted(step_dirs(eval_run / "checkpoints").items()):
        record = read_trained_model(folder)
        assert TRAINED_MODEL_NAME in read_manifest(folder)["files"] and verify_manifest(folder) is None
        index, name, seq_len, theta = expected[step]
        assert record.phase == {"index": index, "name": name, "seq_len": seq_len, "rope_theta": theta}
        assert record.model["rope_theta"] == theta and record.step == step
        assert record.tokenizer["config"]["kind"] == "byte" and record.tokenizer["eos_id"] == 256
        assert str(eval_run) not in (folder / TRAINED_MODEL_NAME).read_text()  # a run dir can move


def test_a_run_saved_before_the_file_loads_the_same_model(eval_run: Path, tmp_path: Path) -> None:
    run = tmp_path / "run"
    shutil.copytree(eval_run, run)
    new = load_run(run)
    assert new.source == f"{run} (checkpoint step 32)" and new.run.trained.tokens == 8 * 64 * 16 + 8 * 128 * 16
    for folder in step_dirs(run / "checkpoints").values():  # as zaya-train wrote checkpoints before
        manifest = read_manifest(folder)
        (folder / TRAINED_MODEL_NAME).unlink()
        write_manifest(folder, step=manifest["step"], world_size=manifest["world_size"])
    old = load_run(run)
    assert old.model.config == new.model.config and old.model.config.rope_theta == 1e5
    assert (old.run.trained.phase, old.run.trained.tokens) == (new.run.trained.phase, new.run.trained.tokens)
    assert old.tokenizer.describe() == new.tokenizer.describe()
    ids = torch.arange(20).reshape(1, 20)
    with torch.no_grad():
        assert torch.equal(old.model(ids), new.model(ids))
    first = load_run(run / "checkpoints" / "step_00000016")  # a step folder names its step
    assert (first.run.step, first.model.config.rope_theta, first.run.trained.phase_name) == (16, 1e4, "short")
    assert json.loads((run / "tokenizer" / "tokenizer_config.json").read_text())["zaya_tokenizer"]["eos_id"] == 256


def test_resume_refuses_a_train_state_that_would_run_code(tmp_path: Path) -> None:
    import pickle

    import pytest
    from zaya_config.safe_pickle import UnsafePickleError
    from zaya_train.checkpoint import CheckpointManager

    manager = CheckpointManager(tmp_path / "ckpt")
    folder = manager.save(1, {"model": {"w": torch.ones(3)}, "train": {"progress": {"step": 1}}})
    state = {"model": {"w": torch.zeros(3)}}
    assert manager.load_latest(state) == 1 and state["train"] == {"progress": {"step": 1}}
    (folder / "train-rank00000.pkl").write_bytes(pickle.dumps({"progress": MakesADir(tmp_path / "pwned")}))
    write_manifest(folder, step=1, world_size=1)  # whole and verified: only its content is hostile
    with pytest.raises(UnsafePickleError, match=r"train-rank00000\.pkl: references (posix|os)\.mkdir") as err:
        manager.load_latest({"model": {"w": torch.zeros(3)}})
    assert "\n" not in str(err.value) and not (tmp_path / "pwned").exists()
    manager.close()
