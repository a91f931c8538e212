"""A run dir as data: `trained_model.json` round trip, the record derived for runs saved before it existed, and
which step folder a reader gets."""

import json
import pickle
from pathlib import Path

import pytest
from zaya_config.train_checkpoint.layout import TRAINED_MODEL_NAME, step_dir_name, train_state_name
from zaya_config.train_checkpoint.manifest import write_manifest
from zaya_config.train_checkpoint.run_dir import locate_run, resolve_run_step
from zaya_config.train_checkpoint.trained_model import (
    TrainCheckpointError,
    TrainedModel,
    read_trained_model,
    write_trained_model,
)

MODEL = {"name": "tiny", "hidden_size": 64, "rope_theta": 10000.0, "vocab_size": 300}
PHASES = [{"name": "short", "seq_len": 64, "rope_theta": 1e4}, {"name": "long", "seq_len": 128, "rope_theta": 1e5}]


def _run(tmp_path: Path, steps=(2, 4), phase: int = 1, tokenizer: bool = True) -> Path:
    """A run dir as zaya-train left it before trained_model.json: config.yaml, step folders, tokenizer/."""
    import yaml

    run = tmp_path / "run"
    run.mkdir()
    config = {"model": MODEL, "recipe": {"phases": PHASES}, "train": {"data": {"tokenizer": {"kind": "byte"}}}}
    (run / "config.yaml").write_text(yaml.safe_dump(config))
    for step in steps:
        folder = run / "checkpoints" / step_dir_name(step)
        folder.mkdir(parents=True)
        progress = {"step": step, "tokens": 32 * step, "phase": phase}
        (folder / train_state_name(0)).write_bytes(pickle.dumps({"progress": progress}))
        write_manifest(folder, step=step, world_size=1)
    if tokenizer:
        (run / "tokenizer").mkdir()
        identity = {"kind": "byte", "eos_id": 256, "fingerprint": "byte-v1", "vocab_size": 257}
        (run / "tokenizer" / "tokenizer_config.json").write_text(json.dumps({"zaya_tokenizer": identity}))
    return run


def test_the_record_round_trips_and_a_bad_file_is_named(tmp_path: Path) -> None:
    record = TrainedModel(step=4, model=MODEL, tokenizer={"eos_id": 256}, phase={"index": 0, "name": "a"}, tokens=9)
    path = write_trained_model(tmp_path, record)
    assert path == tmp_path / TRAINED_MODEL_NAME and json.loads(path.read_text())["format"].endswith("/1")
    assert read_trained_model(tmp_path) == record and record.phase_name == "a"
    assert read_trained_model(tmp_path / "none") is None  # an older step folder: no file
    path.write_text("{")
    with pytest.raises(TrainCheckpointError, match=rf"{path}: not JSON .*the step folder is damaged"):
        read_trained_model(tmp_path)
    path.write_text('{"format": "other/1"}')
    with pytest.raises(TrainCheckpointError, match="not a zaya-train-trained-model/1 file"):
        read_trained_model(tmp_path)


def test_an_older_run_derives_the_phase_theta_tokens_and_tokenizer(tmp_path: Path) -> None:
    run = _run(tmp_path)
    found = resolve_run_step(run, None, latest=lambda root: 4)
    assert (found.step, found.folder, found.run_dir) == (4, run / "checkpoints" / step_dir_name(4), run)
    trained = found.trained
    assert trained.model == {**MODEL, "rope_theta": 1e5}  # the checkpoint's phase, not the preset's theta
    assert trained.phase == {"index": 1, "name": "long", "seq_len": 128, "rope_theta": 1e5}
    assert (trained.step, trained.tokens) == (4, 128)
    assert trained.tokenizer == {"config": {"kind": "byte"}, "eos_id": 256, "fingerprint": "byte-v1", "vocab_size": 257}
    written = TrainedModel(step=4, model={**MODEL, "rope_theta": 5e5}, tokenizer={"eos_id": 7})
    write_trained_model(found.folder, written)
    assert resolve_run_step(run, 4, latest=lambda root: None).trained == written  # the step's own file wins


def test_the_step_folder_a_reader_gets(tmp_path: Path) -> None:
    run = _run(tmp_path, phase=0, tokenizer=False)
    step_folder = run / "checkpoints" / step_dir_name(2)
    assert locate_run(step_folder) == (run, 2) and locate_run(step_folder, 4) == (run, 4)
    assert locate_run(run / "checkpoints") == (run, None) and locate_run(run) == (run, None)
    assert resolve_run_step(run, 2, latest=lambda root: None).trained.model["rope_theta"] == 1e4
    assert "eos_id" not in resolve_run_step(run, 2, latest=lambda root: None).trained.tokenizer
    with pytest.raises(TrainCheckpointError, match=r"no checkpoint for step 3; there are steps \[2, 4\]"):
        resolve_run_step(run, 3, latest=lambda root: None)
    with pytest.raises(TrainCheckpointError, match="no checkpoint passes manifest verification"):
        resolve_run_step(run, None, latest=lambda root: None)
    (step_folder / train_state_name(0)).write_bytes(b"damaged")
    with pytest.raises(TrainCheckpointError, match=rf"checkpoint {step_folder} is damaged .*use another step"):
        resolve_run_step(run, 2, latest=lambda root: None)
    (run / "config.yaml").write_text("train: {}\n")
    with pytest.raises(TrainCheckpointError, match=r"config.yaml: no `model` group; is this a zaya-train"):
        resolve_run_step(run, 4, latest=lambda root: None)
    (run / "config.yaml").write_text("- a list\n")
    with pytest.raises(TrainCheckpointError, match="not a YAML mapping"):
        resolve_run_step(run, 4, latest=lambda root: None)
