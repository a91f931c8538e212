"""TrainerHook: every event reaches every hook by a direct call, in a step's order, and a hook that is not a
TrainerHook is refused before the first step with one line naming it and the fix."""

import pytest
from zaya_train.config import CheckpointConfig
from zaya_train.errors import ZayaTrainError
from zaya_train.hooks import TrainerHook


class EventRecorder(TrainerHook):
    """Every event it gets, with the step the trainer is at (and the saved step and folder)."""

    def __init__(self) -> None:
        self.events: list[tuple] = []

    def before_step(self, trainer) -> None:
        self.events.append(("before_step", trainer.progress.step))

    def after_optimizer_step(self, trainer, metrics) -> None:
        self.events.append(("after_optimizer_step", trainer.progress.step))

    def after_step(self, trainer, metrics) -> None:
        self.events.append(("after_step", trainer.progress.step))

    def on_checkpoint_saved(self, trainer, step, folder) -> None:
        assert (folder / "manifest.json").is_file()  # committed, not `.tmp.step_N`
        self.events.append(("on_checkpoint_saved", step, folder.name))

    def on_end(self, trainer, summary) -> None:
        self.events.append(("on_end", summary["steps"]))


def test_every_event_reaches_a_hook_in_the_order_of_a_step(make_trainer, tmp_path) -> None:
    trainer = make_trainer(max_steps=2, checkpoint=CheckpointConfig(every_steps=2, keep_last=2))
    recorder = EventRecorder()
    trainer.hooks.append(recorder)
    trainer.run()
    assert recorder.events == [
        ("before_step", 0),
        ("after_optimizer_step", 0),
        ("after_step", 1),
        ("before_step", 1),
        ("after_optimizer_step", 1),
        ("on_checkpoint_saved", 2, "step_00000002"),
        ("after_step", 2),
        ("on_end", 2),
    ]


def test_a_hook_that_is_not_a_trainer_hook_is_refused_before_the_first_step(make_trainer, tmp_path) -> None:
    class Plain:  # the events by name only, as hooks were once dispatched
        def after_step(self, trainer, metrics) -> None:
            raise AssertionError("never called")

    trainer = make_trainer(max_steps=2)
    trainer.hooks.append(Plain())
    with pytest.raises(
        ZayaTrainError, match=r"^hook Plain is not a TrainerHook; subclass zaya_train.hooks.TrainerHook"
    ):
        trainer.run()
    assert trainer.progress.step == 0
