"""The model and tokenizer to evaluate, from a zaya-train run dir or a Hugging Face `zaya` folder.

A run dir holds `config.yaml` (the resolved config), `checkpoints/step_N` (DCP) and `tokenizer/`. A
checkpoint's model is the `model` group of config.yaml with the RoPE theta of the recipe phase the
checkpoint was taken in (the trainer switches theta per phase; the preset keeps the first one). Only the
model's tensors are read from the checkpoint; its manifest is verified first.
"""

import pickle
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from zaya_train.checkpoint.layout import parse_step, step_dir_name, train_state_name
from zaya_train.data.tokenizer_files import TOKENIZER_DIR, TOKENIZER_JSON, load_tokenizer_folder
from zaya_train.data.tokenizers import Tokenizer
from zaya_train.errors import ZayaTrainError

RUN_CONFIG = "config.yaml"


@dataclass
class EvalSubject:
    """What is evaluated: the model, its tokenizer, and where they came from (for eval.json)."""

    model: Any  # a ZayaForCausalLM, in eval mode
    tokenizer: Tokenizer
    kind: str  # "run" | "hf"
    path: Path  # the run dir or the HF folder: eval.json goes here
    step: int | None = None
    tokens: int | None = None
    phase: str | None = None

    def describe(self) -> dict[str, Any]:
        """The identity recorded next to the scores."""
        cfg = self.model.config
        return {
            "kind": self.kind,
            "path": str(self.path),
            "step": self.step,
            "tokens": self.tokens,
            "phase": self.phase,
            "model": cfg.name,
            "rope_theta": cfg.rope_theta,
            "tokenizer": self.tokenizer.describe(),
        }


def is_run_dir(path: Path) -> bool:
    """A zaya-train run dir: config.yaml next to checkpoints/."""
    return (path / RUN_CONFIG).is_file() and (path / "checkpoints").is_dir()


def load_subject(
    path: str | Path, *, step: int | None = None, tokenizer: str | Path | None = None, device: str = "cpu"
) -> EvalSubject:
    """Load a run dir (latest verified checkpoint, or `step`), a run's step folder, or a HF `zaya` folder."""
    path = Path(path).expanduser()
    if not path.exists():
        raise ZayaTrainError(f"{path}: no such run dir or HF folder")
    if parse_step(path.name) is not None and path.parent.name == "checkpoints":  # <run>/checkpoints/step_N
        step, path = parse_step(path.name) if step is None else step, path.parent.parent
    elif path.name == "checkpoints" and is_run_dir(path.parent):
        path = path.parent
    given = load_tokenizer_folder(Path(tokenizer).expanduser()) if tokenizer is not None else None
    if is_run_dir(path):
        subject = _load_run(path, step, device, given)
    elif (path / "config.json").is_file():
        if step is not None:
            raise ZayaTrainError(f"{path}: a HF folder holds one set of weights; drop step={step}")
        subject = _load_hf(path, device, given)
    else:
        raise ZayaTrainError(
            f"{path}: neither a zaya-train run dir ({RUN_CONFIG} + checkpoints/) nor a HF folder (config.json + "
            "*.safetensors); pass a run dir such as outputs/pretrain/<date>/<time>"
        )
    if subject.tokenizer.vocab_size > subject.model.config.vocab_size:
        raise ZayaTrainError(
            f"tokenizer vocab {subject.tokenizer.vocab_size} exceeds the model's vocab_size "
            f"{subject.model.config.vocab_size}; this tokenizer does not belong to {path}"
        )
    return subject


def _read_yaml(path: Path) -> dict[str, Any]:
    from omegaconf import OmegaConf

    data = OmegaConf.to_container(OmegaConf.load(path), resolve=False)
    if not isinstance(data, dict):
        raise ZayaTrainError(f"{path}: not a YAML mapping; expected a zaya-train run's resolved config")
    return data


def _step_folder(root: Path, step: int | None) -> tuple[int, Path]:
    """The verified checkpoint folder to read: `step`, or the newest that passes its manifest check."""
    from zaya_train.checkpoint.layout import step_dirs
    from zaya_train.checkpoint.manifest import verify_manifest

    dirs = step_dirs(root)
    if not dirs:
        raise ZayaTrainError(f"{root}: no checkpoints (step_N folders); train first or point at another run")
    if step is not None:
        if step not in dirs:
            raise ZayaTrainError(f"{root}: no checkpoint for step {step}; there are steps {sorted(dirs)}")
        problem = verify_manifest(dirs[step])
        if problem is not None:
            raise ZayaTrainError(f"checkpoint {dirs[step]} is damaged ({problem}); evaluate another step")
        return step, dirs[step]
    from zaya_train.checkpoint import CheckpointManager

    found = CheckpointManager(root).latest_step()
    if found is None:
        raise ZayaTrainError(f"{root}: no checkpoint passes verification (see the warnings above)")
    return found, root / step_dir_name(found)


def _load_run(run_dir: Path, step: int | None, device: str, tokenizer: Tokenizer | None) -> EvalSubject:
    import torch.distributed.checkpoint as dcp
    from torch.distributed.checkpoint.state_dict import get_model_state_dict, set_model_state_dict
    from zaya_model import build_model

    config = _read_yaml(run_dir / RUN_CONFIG)
    if not isinstance(config.get("model"), dict):
        raise ZayaTrainError(f"{run_dir / RUN_CONFIG}: no `model` group; is this a zaya-train pretraining run?")
    ckpt_dir = ((config.get("train") or {}).get("checkpoint") or {}).get("dir")
    root = Path(ckpt_dir) if ckpt_dir else run_dir / "checkpoints"
    step, folder = _step_folder(root, step)
    with open(folder / train_state_name(0), "rb") as stream:
        progress = pickle.load(stream)["progress"]
    model = build_model(config["model"])
    phases = (config.get("recipe") or {}).get("phases") or []
    phase_name = None
    if 0 <= progress["phase"] < len(phases):
        phase = phases[progress["phase"]]
        model.set_rope_theta(float(phase["rope_theta"]))
        phase_name = phase.get("name")
    state = {"model": get_model_state_dict(model)}
    dcp.load(state, storage_reader=dcp.FileSystemReader(folder), no_dist=True)
    set_model_state_dict(model, state["model"])
    return EvalSubject(
        model=model.to(device).eval(),
        tokenizer=tokenizer or _run_tokenizer(run_dir, config),
        kind="run",
        path=run_dir,
        step=step,
        tokens=int(progress["tokens"]),
        phase=phase_name,
    )


def _run_tokenizer(run_dir: Path, config: dict[str, Any]) -> Tokenizer:
    """The run's own tokenizer: its saved tokenizer/ folder, else what config.yaml names (byte or a file)."""
    if (run_dir / TOKENIZER_DIR / TOKENIZER_JSON).is_file():
        return load_tokenizer_folder(run_dir / TOKENIZER_DIR)
    from zaya_train.config import TokenizerConfig
    from zaya_train.data.tokenizers import load_tokenizer

    raw = ((config.get("train") or {}).get("data") or {}).get("tokenizer") or {}
    cfg = TokenizerConfig(**raw)
    if cfg.kind == "bpe":
        raise ZayaTrainError(
            f"{run_dir}: no {TOKENIZER_DIR}/ folder and its BPE tokenizer was trained into a cache; pass "
            "tokenizer=PATH (the cached tokenizer.json the run used)"
        )
    return load_tokenizer(cfg)


def _load_hf(folder: Path, device: str, tokenizer: Tokenizer | None) -> EvalSubject:
    from zaya_model import load_hf

    model = load_hf(folder).to(device).eval()
    if tokenizer is not None:
        return EvalSubject(model=model, tokenizer=tokenizer, kind="hf", path=folder)
    if not (folder / TOKENIZER_JSON).is_file() and (folder / TOKENIZER_DIR / TOKENIZER_JSON).is_file():
        tok_folder = folder / TOKENIZER_DIR
    else:
        tok_folder = folder
    if not (tok_folder / TOKENIZER_JSON).is_file():
        raise ZayaTrainError(
            f"{folder}: no {TOKENIZER_JSON}; pass tokenizer=<run>/tokenizer (the tokenizer the weights were trained with)"
        )
    return EvalSubject(model=model, tokenizer=load_tokenizer_folder(tok_folder), kind="hf", path=folder)


def default_device() -> str:
    """cuda when there is a GPU, else cpu."""
    return "cuda" if torch.cuda.is_available() else "cpu"
