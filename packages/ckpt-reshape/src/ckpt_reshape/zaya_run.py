"""The model config a zaya-train checkpoint was trained under, for an HF export that reproduces it.

zaya-train records the model as trained in each step folder (`trained_model.json`: the RoPE theta of the
recipe phase the checkpoint was taken in, the tokenizer); for runs saved before that file,
`zaya_config.train_checkpoint.run_dir` derives the same record from the run's `config.yaml`. That module is the
one home of both; here the record becomes a `ZayaConfig` with the tokenizer's EOS as eos/bos/pad ids
(zaya-train separates documents with it: a byte-level run's EOS is 256, not the preset's), which is what
transformers needs to generate as the run does. ckpt-reshape does not import zaya-train.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from zaya_config.train_checkpoint.layout import parse_step
from zaya_config.train_checkpoint.run_dir import CHECKPOINTS_DIR, RUN_CONFIG, read_run_config, trained_model_of
from zaya_config.train_checkpoint.trained_model import TrainCheckpointError, TrainedModel, read_trained_model

from ckpt_reshape.errors import ReshapeError
from ckpt_reshape.train_root import resolve_zaya_train_root


def trained_model_for(src: Path) -> TrainedModel | None:
    """The trained model of a zaya-train checkpoint (`src`: a step folder, or a root with `latest`); None when
    the step folder has no `trained_model.json` and sits in no run dir with a `model` group."""
    src = Path(src).resolve()
    folder = src if parse_step(src.name) is not None else resolve_zaya_train_root(src)
    if parse_step(folder.name) is None:
        return None
    try:
        record = read_trained_model(folder)
        run_dir = folder.parent.parent
        if record is not None or folder.parent.name != CHECKPOINTS_DIR or not (run_dir / RUN_CONFIG).is_file():
            return record
        config = read_run_config(run_dir)
        return trained_model_of(folder, run_dir, config) if isinstance(config.get("model"), dict) else None
    except TrainCheckpointError as err:
        raise ReshapeError(str(err)) from None


def as_trained(record: TrainedModel, source: Path) -> Any:
    """The record's `ZayaConfig`, with the tokenizer's EOS as eos/bos/pad when it is in the vocabulary."""
    from ckpt_reshape.zaya_extra import zaya_model

    try:
        cfg = zaya_model().ZayaConfig.from_dict(record.model)
    except ReshapeError:
        raise
    except Exception as err:
        raise ReshapeError(f"{source}: its model config is not a zaya-model config ({err})") from err
    eos = record.tokenizer.get("eos_id")
    if isinstance(eos, int) and 0 <= eos < cfg.vocab_size:
        cfg = cfg.replace(eos_token_id=eos, bos_token_id=eos, pad_token_id=eos)
    return cfg
