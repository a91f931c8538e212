"""A zaya-train run dir as data: its file names, which step folder to read, and the model that step holds.

    run_dir/
      config.yaml          the resolved config the run started from
      checkpoints/         the checkpoint root (or `train.checkpoint.dir`): step folders (`layout.py`)
      tokenizer/           tokenizer.json + tokenizer_config.json (its `zaya_tokenizer` identity)

`resolve_run_step` picks the step folder (a given step, verified, or the newest that `latest` chooses) and
returns it with its `TrainedModel`: the step's `trained_model.json`, or, for runs saved before that file
existed, the same record derived from `config.yaml` (the `model` group with the RoPE theta of the phase in
the step's rank-0 train state) and the run's `tokenizer/` folder. This is the one place that derivation
lives; zaya-train builds the model from it (`zaya_train.trained_run.load_run`) and ckpt-reshape exports it.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from zaya_config.train_checkpoint.layout import parse_step, step_dir_name, step_dirs, train_state_name
from zaya_config.train_checkpoint.trained_model import TrainCheckpointError, TrainedModel, read_trained_model

RUN_CONFIG = "config.yaml"
CHECKPOINTS_DIR = "checkpoints"
TOKENIZER_DIR = "tokenizer"
TOKENIZER_JSON = "tokenizer.json"
TOKENIZER_CONFIG = "tokenizer_config.json"


@dataclass(frozen=True)
class RunStep:
    """One checkpoint step of a run: the run dir, the checkpoint root, the step folder and its trained model."""

    run_dir: Path
    root: Path
    step: int
    folder: Path
    trained: TrainedModel
    config: dict[str, Any]  # the run's config.yaml as a plain mapping


def locate_run(path: Path, step: int | None = None) -> tuple[Path, int | None]:
    """(run dir, step) for a run dir, its `checkpoints/`, or one of its step folders (which names its step)."""
    path = Path(path)
    if parse_step(path.name) is not None and path.parent.name == CHECKPOINTS_DIR:
        return path.parent.parent, parse_step(path.name) if step is None else step
    if path.name == CHECKPOINTS_DIR and (path.parent / RUN_CONFIG).is_file():
        return path.parent, step
    return path, step


def read_run_config(run_dir: Path) -> dict[str, Any]:
    """The run's `config.yaml` as a plain mapping (interpolations left as written: the file is resolved)."""
    from omegaconf import OmegaConf

    path = Path(run_dir) / RUN_CONFIG
    try:
        data = OmegaConf.to_container(OmegaConf.load(path), resolve=False)
    except Exception as err:
        raise TrainCheckpointError(f"{path}: not readable YAML ({err}); expected a zaya-train run's config") from None
    if not isinstance(data, dict):
        raise TrainCheckpointError(f"{path}: not a YAML mapping; expected a zaya-train run's resolved config")
    return data


def checkpoint_root(run_dir: Path, config: dict[str, Any]) -> Path:
    """The run's checkpoint root: `train.checkpoint.dir`, else `<run>/checkpoints`."""
    configured = ((config.get("train") or {}).get("checkpoint") or {}).get("dir")
    return Path(configured) if configured else Path(run_dir) / CHECKPOINTS_DIR


def resolve_run_step(run_dir: Path, step: int | None, latest: Callable[[Path], int | None]) -> RunStep:
    """The step folder to read (`step`, verified; else `latest(root)`, the newest verified one) and its model."""
    from zaya_config.train_checkpoint.manifest import verify_manifest

    run_dir = Path(run_dir)
    config = read_run_config(run_dir)
    root = checkpoint_root(run_dir, config)
    dirs = step_dirs(root)
    if not dirs:
        raise TrainCheckpointError(
            f"{root}: no checkpoints (step_N folders); train longer (train.checkpoint.every_steps) or point at "
            "another run"
        )
    if step is not None:
        if step not in dirs:
            raise TrainCheckpointError(f"{root}: no checkpoint for step {step}; there are steps {sorted(dirs)}")
        problem = verify_manifest(dirs[step])
        if problem is not None:
            raise TrainCheckpointError(f"checkpoint {dirs[step]} is damaged ({problem}); use another step")
    else:
        step = latest(root)
        if step is None:
            raise TrainCheckpointError(f"{root}: no checkpoint passes manifest verification (see the warnings above)")
    folder = root / step_dir_name(step)
    return RunStep(run_dir, root, step, folder, trained_model_of(folder, run_dir, config), config)


def trained_model_of(folder: Path, run_dir: Path, config: dict[str, Any]) -> TrainedModel:
    """The step folder's `trained_model.json`, else the record derived from the run's files (older runs)."""
    return read_trained_model(folder) or derive_trained_model(folder, run_dir, config)


def derive_trained_model(folder: Path, run_dir: Path, config: dict[str, Any]) -> TrainedModel:
    """What zaya-train now writes as `trained_model.json`, from a run saved before: config.yaml's `model` group
    with the RoPE theta of the phase in the step's rank-0 train state, and the run's tokenizer."""
    model = config.get("model")
    if not isinstance(model, dict):
        raise TrainCheckpointError(
            f"{Path(run_dir) / RUN_CONFIG}: no `model` group; is this a zaya-train pretraining run?"
        )
    progress = _progress(Path(folder))
    phases = (config.get("recipe") or {}).get("phases") or []
    index, phase = progress.get("phase", -1), None
    model = dict(model)
    if isinstance(index, int) and 0 <= index < len(phases):
        spec = phases[index]
        phase = {"index": index, "name": spec.get("name"), "seq_len": spec.get("seq_len")}
        if spec.get("rope_theta") is not None:
            phase["rope_theta"] = model["rope_theta"] = float(spec["rope_theta"])
    tokens = progress.get("tokens")
    return TrainedModel(
        step=parse_step(Path(folder).name) or 0,
        model=model,
        tokenizer=_tokenizer_record(run_dir, config),
        phase=phase,
        tokens=int(tokens) if tokens is not None else None,
    )


def _progress(folder: Path) -> dict[str, Any]:
    from zaya_config.train_checkpoint.train_state import load_train_state

    path = folder / train_state_name(0)
    if not path.is_file():
        return {}
    try:
        progress = load_train_state(path).get("progress")
    except ValueError as err:
        raise TrainCheckpointError(str(err)) from None
    return progress if isinstance(progress, dict) else {}


def _tokenizer_record(run_dir: Path, config: dict[str, Any]) -> dict[str, Any]:
    """The run's tokenizer config, with the saved tokenizer's identity (eos_id, fingerprint) when it has one."""
    record: dict[str, Any] = {"config": dict(((config.get("train") or {}).get("data") or {}).get("tokenizer") or {})}
    saved = Path(run_dir) / TOKENIZER_DIR / TOKENIZER_CONFIG
    if saved.is_file():
        identity = json.loads(saved.read_text(encoding="utf-8")).get("zaya_tokenizer") or {}
        for key in ("eos_id", "fingerprint", "vocab_size"):
            if key in identity:
                record[key] = identity[key]
    return record
