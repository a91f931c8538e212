"""The model and tokenizer to evaluate, from a zaya-train run dir or a Hugging Face `zaya` folder.

A run dir holds `config.yaml` (the resolved config), `checkpoints/step_N` (DCP) and `tokenizer/`; it loads
through the one run loader (`zaya_train.trained_run.load_run`): the step's model as trained (its
`trained_model.json`: the RoPE theta of the recipe phase it was taken in), its weights, verified by the
manifest first, and the run's tokenizer.
"""

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from zaya_config.train_checkpoint.run_dir import CHECKPOINTS_DIR, RUN_CONFIG, locate_run

from zaya_train.data.tokenizer_files import TOKENIZER_DIR, TOKENIZER_JSON, load_tokenizer_folder
from zaya_train.data.tokenizers import Tokenizer
from zaya_train.errors import ZayaTrainError


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
    return (path / RUN_CONFIG).is_file() and (path / CHECKPOINTS_DIR).is_dir()


def load_subject(
    path: str | Path, *, step: int | None = None, tokenizer: str | Path | None = None, device: str = "cpu"
) -> EvalSubject:
    """Load a run dir (latest verified checkpoint, or `step`), a run's step folder, or a HF `zaya` folder."""
    path = Path(path).expanduser()
    if not path.exists():
        raise ZayaTrainError(f"{path}: no such run dir or HF folder")
    path, step = locate_run(path, step)  # <run>/checkpoints/step_N names its step
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


def _load_run(run_dir: Path, step: int | None, device: str, tokenizer: Tokenizer | None) -> EvalSubject:
    from zaya_train.trained_run import load_run

    loaded = load_run(run_dir, step=step, device=device, tokenizer=tokenizer)
    return EvalSubject(
        model=loaded.model,
        tokenizer=loaded.tokenizer,
        kind="run",
        path=run_dir,
        step=loaded.run.step,
        tokens=loaded.run.trained.tokens,
        phase=loaded.run.trained.phase_name,
    )


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
