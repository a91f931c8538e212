"""The CheckpointManager's Stateful parts: saved by their state dicts, loaded back into the same objects, in
the order given; with no checkpoint nothing is touched (not even the optimizer state a template would create)."""

from pathlib import Path

import torch
from zaya_train.checkpoint import CheckpointManager
from zaya_train.checkpoint.parts import ModelState, OptimizerState, PlainState, Written
from zaya_train.train_state import RNGState, TrainProgress


class Order:
    """A plain part that records when it is loaded."""

    def __init__(self, name: str, log: list[str]) -> None:
        self.name, self.log = name, log

    def state_dict(self) -> str:
        return self.name

    def load_state_dict(self, state: str | None) -> None:
        self.log.append(f"{self.name}={state}")


def _parts(model, optim, progress, log) -> dict:
    train = PlainState({"progress": progress, "first": Order("first", log), "rng": RNGState(), "world": Written(2)})
    return {"model": ModelState(model), "optim": OptimizerState(model, optim), "train": train}


def test_parts_round_trip_into_the_same_objects_in_order(tmp_path: Path) -> None:
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 4)
    optim = torch.optim.AdamW(model.parameters(), lr=0.1)
    model(torch.randn(3, 4)).sum().backward()
    optim.step()
    progress, log = TrainProgress(step=7, tokens=700, phase=1, loss_history=[2.5]), []
    manager = CheckpointManager(tmp_path, parts=_parts(model, optim, progress, log))
    manager.save(7)
    saved_weight = model.weight.detach().clone()
    saved_moment = optim.state[model.weight]["exp_avg"].clone()
    expected_draw = torch.rand(3)  # the RNG as saved, drawn once

    with torch.no_grad():
        model.weight.zero_()
    optim.state[model.weight]["exp_avg"].zero_()
    progress.step, progress.loss_history = 0, []
    assert manager.load_latest() == 7
    assert torch.equal(model.weight, saved_weight) and torch.equal(optim.state[model.weight]["exp_avg"], saved_moment)
    assert (progress.step, progress.tokens, progress.phase, progress.loss_history) == (7, 700, 1, [2.5])
    assert torch.equal(torch.rand(3), expected_draw)  # the RNG part restored the saved state
    assert log == ["first=first"]
    assert manager.parts["train"].state_dict()["world"] == 2


def test_no_checkpoint_leaves_every_part_untouched(tmp_path: Path) -> None:
    model = torch.nn.Linear(4, 4)
    optim = torch.optim.AdamW(model.parameters())
    progress, log = TrainProgress(step=3), []
    manager = CheckpointManager(tmp_path / "empty", parts=_parts(model, optim, progress, log))
    assert manager.load_latest() is None
    assert not optim.state and progress.step == 3 and log == []  # no template was built, nothing loaded
