"""Shared fixtures of zaya-train's tests: small real corpora (slices of the standard library) and a
factory for real Trainers on a shrunken zaya1-tiny."""

from pathlib import Path

import pytest


def pytest_configure(config):
    """Compiled tests and the subprocesses they start share one compile cache (tests/inductor_cache.py)."""
    from inductor_cache import use_shared_inductor_cache

    use_shared_inductor_cache()


@pytest.fixture(autouse=True)
def one_intra_op_thread(monkeypatch):
    """The processes these tests start run one intra-op thread each, as torchrun gives its ranks: the tiny
    models gain nothing from a second thread, and where every core already runs a test it only spins (a drill
    run: 9 -> 4 CPU seconds). Their results do not depend on it."""
    monkeypatch.setenv("OMP_NUM_THREADS", "1")


@pytest.fixture(scope="session")
def load_worker():
    """Factory: load_worker(path) -> a worker script of these tests (one torchrun starts) as a module of this
    process, to run its one-process part here."""
    import importlib.util

    def load(path: Path):
        spec = importlib.util.spec_from_file_location(path.stem, path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module

    return load


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
    from zaya_train.build import build_trainer
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
        groups = {"model": model_cfg, "train": train, "recipe": recipe, "hardware": hardware("cpu")}
        trainer = build_trainer(groups, run_dir or tmp_path / "run", cache_dir=tmp_path / "cache", ctx=ctx)
        trainer.show_progress = False
        made.append(trainer)
        return trainer

    yield factory
    for trainer in made:
        trainer.close()


def _pretrain(run_dir: Path, cache_dir: Path, steps_per_phase: int = 16, **train_overrides) -> dict:
    """A real pretraining run (`run_pretraining`, the pretrain service's code path) of a shrunken zaya1-tiny
    on two stdlib packages: two phases (context 64 -> 128, RoPE theta 1e4 -> 1e5), checkpoints, config.yaml
    and tokenizer/ in `run_dir`. Returns the summary."""
    from omegaconf import OmegaConf
    from zaya_model import ZayaConfig
    from zaya_train import run_pretraining

    train = {
        "global_batch_size": 8,
        "micro_batch_size": 8,
        "device": "cpu",
        "cpu_threads": 1,
        "data": {
            "sources": {
                "json": {"path": "stdlib", "glob": "json/*.py", "exclude": []},
                "email": {"path": "stdlib", "glob": "email/*.py", "exclude": []},
            },
            "val_fraction": 0.2,
            "cache_dir": str(cache_dir),
        },
        "checkpoint": {"every_steps": steps_per_phase, "keep_last": 3},
        "eval": {"every_steps": steps_per_phase, "sequences": 4, "sample_tokens": 0},
        "plots": False,
    }
    for key, value in train_overrides.items():
        node = train
        *parents, leaf = key.split(".")
        for part in parents:
            node = node.setdefault(part, {})
        node[leaf] = value
    schedule = {"kind": "constant", "peak_lr": 1e-2, "warmup_fraction": 0.1}
    cfg = OmegaConf.create(
        {
            "model": ZayaConfig.from_preset("zaya1-tiny").to_dict(),
            "train": train,
            "recipe": {
                "name": "eval-test",
                "phases": [
                    {
                        "name": "short",
                        "tokens": 8 * 64 * steps_per_phase,
                        "seq_len": 64,
                        "rope_theta": 1e4,
                        "mixture": {"json": 1, "email": 1},
                        "schedule": schedule,
                    },
                    {
                        "name": "long",
                        "tokens": 8 * 128 * steps_per_phase,
                        "seq_len": 128,
                        "rope_theta": 1e5,
                        "mixture": {"json": 1, "email": 1},
                        "schedule": schedule,
                    },
                ],
            },
            "logging": {"progress": False, "log_every_steps": 1},
        }
    )
    return run_pretraining(cfg, run_dir)


@pytest.fixture
def pretrain():
    """Factory: pretrain(run_dir, cache_dir, steps_per_phase=16, **train_overrides) -> summary (see _pretrain)."""
    return _pretrain


@pytest.fixture(scope="session")
def eval_run() -> Path:
    """A trained run dir (32 steps, two phases; checkpoints at steps 16 and 32) shared by the eval tests: built
    once (every test process of a session, and later sessions, share it; see tests/artifact_cache.py), keyed by
    `run_dir_key` of `_pretrain`'s source. Read-only: a test that writes into it works on a copy."""
    import inspect

    from trained_runs import cached_run, run_dir_key

    def build(folder: Path) -> None:
        _pretrain(folder / "run", folder / "cache")

    return cached_run("zaya-train-eval-run", run_dir_key(inspect.getsource(_pretrain)), build) / "run"
