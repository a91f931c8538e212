"""Shared fixtures of zaya-train's tests: small real corpora (slices of the standard library) and a
factory for real Trainers on a shrunken zaya1-tiny."""

from pathlib import Path

import pytest


@pytest.fixture
def tiny_sources():
    """Two small real sources from the standard library: the `json` and `email` packages."""
    from zaya_train.config import SourceConfig

    return {
        "json": SourceConfig(path="stdlib", glob="json/*.py", exclude=[]),
        "email": SourceConfig(path="stdlib", glob="email/*.py", exclude=[]),
    }


@pytest.fixture
def make_trainer(tmp_path: Path, tiny_sources):
    """Build a real Trainer (zaya1-tiny, byte tokenizer) from overrides of TrainConfig and a phase list."""
    from zaya_config import hardware
    from zaya_model import ZayaConfig
    from zaya_train.build import create_trainer
    from zaya_train.config import CheckpointConfig, DataConfig, EvalConfig, TrainConfig
    from zaya_train.recipe import PhaseConfig, RecipeConfig, ScheduleConfig

    made = []

    def factory(phases=None, run_dir: Path | None = None, ctx=None, model_overrides=None, **train_kwargs):
        phases = phases or [
            PhaseConfig(
                name="p0",
                tokens=10**6,
                seq_len=32,
                mixture={"json": 1.0, "email": 1.0},
                schedule=ScheduleConfig(kind="constant", peak_lr=3e-3, warmup_fraction=0.0),
            )
        ]
        train_kwargs.setdefault("data", DataConfig(sources=dict(tiny_sources), val_fraction=0.2))
        train_kwargs.setdefault("checkpoint", CheckpointConfig(enabled=False))
        train_kwargs.setdefault("eval", EvalConfig(every_steps=1000, sequences=4, sample_tokens=0))
        train_kwargs.setdefault("global_batch_size", 4)
        train_kwargs.setdefault("micro_batch_size", 2)
        train_kwargs.setdefault("plots", False)
        train = TrainConfig(**train_kwargs)
        train.validate()
        recipe = RecipeConfig(name="test", phases=phases)
        recipe.validate()
        model_cfg = ZayaConfig.from_preset("zaya1-tiny", **(model_overrides or {}))
        trainer = create_trainer(
            model_cfg,
            train,
            recipe,
            run_dir or tmp_path / "run",
            cache_dir=tmp_path / "cache",
            ctx=ctx,
            hardware=hardware("cpu"),
        )
        trainer.show_progress = False
        made.append(trainer)
        return trainer

    yield factory
    for trainer in made:
        trainer.close()
