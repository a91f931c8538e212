"""A trained model ready to generate: from a pretrain run dir or a Hugging Face `zaya` folder, with its tokenizer.

A run dir (`config.yaml` + `checkpoints/`, as the pretrain service leaves it) loads through the one run
loader, `zaya_train.trained_run.load_run`: the newest verified checkpoint's weights, the model config as
trained at that step (its `trained_model.json`, or derived from config.yaml for older runs) and the run's
tokenizer. A HF folder gives
`zaya_model.load_hf` and its `tokenizer.json`, EOS from `config.json`. This lives in zaya-train, not
zaya-model, because reading runs needs zaya-train's checkpoints and tokenizers (the dependency order).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import torch
from zaya_config.train_checkpoint.run_dir import RUN_CONFIG

from zaya_train.data.tokenizers import ByteTokenizer, HFTokenizer, Tokenizer
from zaya_train.errors import ZayaTrainError


@dataclass
class TrainedModel:
    """The model (eval mode, on its device), its tokenizer, and where both came from."""

    model: torch.nn.Module
    tokenizer: Tokenizer
    source: str


def load_trained(
    path: str | Path, device: torch.device, dtype: torch.dtype, tokenizer: str | None = None
) -> TrainedModel:
    """Load a run dir or a HF folder; `tokenizer` ("byte" or a tokenizer.json) overrides the one found there."""
    root = Path(path)
    if (root / RUN_CONFIG).is_file():
        loaded = _load_run(root)
    elif (root / "config.json").is_file():
        loaded = _load_hf(root)
    else:
        raise ZayaTrainError(
            f"{root}: neither a run dir (config.yaml + checkpoints/) nor a HF folder (config.json + *.safetensors)"
        )
    if tokenizer is not None:
        loaded.tokenizer = _tokenizer_override(tokenizer, loaded.model)
    if loaded.tokenizer.vocab_size > loaded.model.config.vocab_size:
        raise ZayaTrainError(
            f"tokenizer vocab {loaded.tokenizer.vocab_size} exceeds the model's vocab_size "
            f"{loaded.model.config.vocab_size}; pass the tokenizer the model was trained with (--tokenizer)"
        )
    loaded.model.to(device=device, dtype=dtype).eval()
    return loaded


def _load_run(run_dir: Path) -> TrainedModel:
    from zaya_train.trained_run import load_run

    loaded = load_run(run_dir)
    return TrainedModel(loaded.model, loaded.tokenizer, loaded.source)


def _load_hf(folder: Path) -> TrainedModel:
    from zaya_model import load_hf

    model = load_hf(folder)
    file = folder / "tokenizer.json"
    if not file.is_file():
        raise ZayaTrainError(f"{folder}: no tokenizer.json; pass --tokenizer PATH (a tokenizer.json) or 'byte'")
    return TrainedModel(model, _tokenizer_file(file, model.config.eos_token_id), str(folder))


def _tokenizer_file(file: Path, eos_id: int | None) -> Tokenizer:
    """A tokenizer.json whose EOS token is the model's `eos_token_id`."""
    from tokenizers import Tokenizer as _HFTokenizer

    name = _HFTokenizer.from_file(str(file)).id_to_token(eos_id) if eos_id is not None else None
    if name is None:
        raise ZayaTrainError(f"{file}: the model's eos_token_id {eos_id} is not a token of this tokenizer")
    return HFTokenizer(file, name)


def _tokenizer_override(spec: str, model: torch.nn.Module) -> Tokenizer:
    if spec == "byte":
        return ByteTokenizer()
    return _tokenizer_file(Path(spec), model.config.eos_token_id)
