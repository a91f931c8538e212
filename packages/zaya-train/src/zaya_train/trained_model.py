"""A trained model ready to generate: from a pretrain run dir or a Hugging Face `zaya` folder, with its tokenizer.

A run dir (`config.yaml` + `checkpoints/`, as the pretrain service leaves it) gives the model config, the
newest verified checkpoint (`CheckpointManager.load_latest`; only the weights are read, not the optimizer
or the balancing moments, so runs from older layouts load too), the RoPE theta of the phase that
checkpoint was in, and the tokenizer of `train.data.tokenizer` (bytes; a tokenizer.json; or the run's BPE,
found again in the data cache or retrained identically from the same sources). A HF folder gives
`zaya_model.load_hf` and its `tokenizer.json`, EOS from `config.json`. This lives in zaya-train, not
zaya-model, because reading runs needs zaya-train's checkpoints and tokenizers (DESIGN.md's order).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import torch

from zaya_train.data.tokenizers import ByteTokenizer, HFTokenizer, Tokenizer
from zaya_train.errors import ZayaTrainError

if TYPE_CHECKING:
    from omegaconf import DictConfig

    from zaya_train.config import TrainConfig


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
    if (root / "config.yaml").is_file():
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
    from omegaconf import OmegaConf
    from torch.distributed.checkpoint.state_dict import get_model_state_dict
    from zaya_config import validate_config
    from zaya_model import build_model, hf_keys

    from zaya_train.checkpoint.layout import step_dirs
    from zaya_train.checkpoint.manager import CheckpointManager

    cfg = OmegaConf.load(run_dir / "config.yaml")
    objects = validate_config(cfg)
    if "model" not in objects or "train" not in objects:
        raise ZayaTrainError(f"{run_dir / 'config.yaml'} has no model/train groups; is it a pretrain run dir?")
    train, recipe = objects["train"], objects.get("recipe")
    root = Path(train.checkpoint.dir) if train.checkpoint.dir else run_dir / "checkpoints"
    if not root.is_dir() or not step_dirs(root):
        raise ZayaTrainError(
            f"{root}: no checkpoint to load; train longer (train.checkpoint.every_steps) or check the path"
        )
    model = build_model(objects["model"])
    weights = {k: v for k, v in get_model_state_dict(model).items() if not k.endswith(hf_keys.OURS_ONLY_SUFFIXES)}
    state = {"model": weights}
    step = CheckpointManager(root).load_latest(state)
    if step is None:
        raise ZayaTrainError(f"{root}: no checkpoint passes manifest verification")
    phase = int(state["train"]["progress"].get("phase", -1))
    if recipe is not None and 0 <= phase < len(recipe.phases):
        model.set_rope_theta(recipe.phases[phase].rope_theta)  # the context phase the weights were trained in
    return TrainedModel(model, _run_tokenizer(cfg, train), f"{run_dir} (checkpoint step {step})")


def _run_tokenizer(cfg: DictConfig, train: TrainConfig) -> Tokenizer:
    """The run's tokenizer, as the data pipeline made it."""
    from zaya_train.build import data_cache_dir
    from zaya_train.data.corpus import iter_texts, list_documents
    from zaya_train.data.pipeline import is_shard
    from zaya_train.data.tokenizers import load_tokenizer

    tok = train.data.tokenizer
    if tok.kind != "bpe":
        return load_tokenizer(tok)
    docs = [
        list_documents(src, f"train.data.sources.{name}")
        for name, src in train.data.sources.items()
        if not is_shard(src)
    ]
    texts = (text for group in docs for text in iter_texts(group, tok.train_max_bytes))
    return load_tokenizer(tok, texts, data_cache_dir(cfg, train) / "tokenizers")


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
