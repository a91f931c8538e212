"""The restricted unpickler: a real train state and real DCP metadata load; a pickle naming anything else is
refused with one line naming the file and the global, and the global is never called."""

import pickle
import random
from pathlib import Path

import numpy as np
import pytest
import torch
from hostile_pickle import MakesADir
from zaya_config.safe_pickle import UnsafePickleError
from zaya_config.train_checkpoint.dcp_metadata import read_dcp_metadata, safe_reader
from zaya_config.train_checkpoint.train_state import load_train_state


def test_a_train_state_with_every_rng_loads_back_equal(tmp_path: Path) -> None:
    state = {
        "progress": {"step": 3, "tokens": 96, "phase": 1, "loss_history": [2.5, 2.25]},
        "rng": {"python": random.getstate(), "numpy": np.random.get_state(), "torch": torch.get_rng_state()},
        "sampler": {"drawn": {"a": 4}},
        "seen": {1, 2},
    }
    path = tmp_path / "train-rank00000.pkl"
    path.write_bytes(pickle.dumps(state, protocol=5))
    loaded = load_train_state(path)
    assert loaded["progress"] == state["progress"] and loaded["seen"] == {1, 2}
    assert loaded["rng"]["python"] == state["rng"]["python"]
    assert np.array_equal(loaded["rng"]["numpy"][1], state["rng"]["numpy"][1])
    assert torch.equal(loaded["rng"]["torch"], state["rng"]["torch"])


def test_a_train_state_naming_another_global_is_refused_in_one_line(tmp_path: Path) -> None:
    path = tmp_path / "train-rank00000.pkl"
    path.write_bytes(pickle.dumps({"progress": {}, "x": MakesADir(tmp_path / "pwned")}))
    with pytest.raises(
        UnsafePickleError, match=rf"{path}: references (posix|os)\.mkdir, which is not unpickled"
    ) as err:
        load_train_state(path)
    assert "\n" not in str(err.value) and "check where it came from" in str(err.value)
    assert not (tmp_path / "pwned").exists()  # refused before anything ran
    path.write_bytes(pickle.dumps([1, 2]))
    with pytest.raises(UnsafePickleError, match="train state is a list, expected zaya-train's dict"):
        load_train_state(path)
    path.write_bytes(pickle.dumps({"a": 1})[:-3])
    with pytest.raises(UnsafePickleError, match=r"does not unpickle .*truncated or corrupt"):
        load_train_state(path)


def test_dcp_metadata_loads_restricted_and_dcp_reads_through_it(tmp_path: Path) -> None:
    import torch.distributed.checkpoint as dcp

    state = {"model": {"w": torch.arange(6.0).reshape(2, 3)}, "extra": {"step": 7}}
    dcp.save(state, storage_writer=dcp.FileSystemWriter(tmp_path / "ck"), no_dist=True)
    metadata = read_dcp_metadata(tmp_path / "ck")
    assert "model.w" in metadata.state_dict_metadata
    back = {"model": {"w": torch.zeros(2, 3)}, "extra": {"step": 0}}
    dcp.load(back, storage_reader=safe_reader(tmp_path / "ck"), no_dist=True)
    assert torch.equal(back["model"]["w"], state["model"]["w"]) and back["extra"]["step"] == 7

    (tmp_path / "ck" / ".metadata").write_bytes(pickle.dumps(MakesADir(tmp_path / "pwned")))
    with pytest.raises(UnsafePickleError, match=r"\.metadata: references (posix|os)\.mkdir"):
        safe_reader(tmp_path / "ck")
    assert not (tmp_path / "pwned").exists()
