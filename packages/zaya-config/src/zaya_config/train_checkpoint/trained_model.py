"""`trained_model.json`: the model a checkpoint step folder holds, as it was trained at that step.

A run's `config.yaml` keeps the model preset it started from, but the trainer changes the model during the
run: each recipe phase sets its RoPE theta and context length, and documents are separated with the
tokenizer's EOS. Every reader of a checkpoint (`zaya model generate`, `zaya eval`, ckpt-reshape's HF export)
needs the model as trained, so zaya-train writes it into each step folder, where the manifest covers it:

    {"format": "zaya-train-trained-model/1", "step": 32, "tokens": 65536,
     "phase": {"index": 1, "name": "long", "seq_len": 256, "rope_theta": 100000.0},
     "model": {<every ZayaConfig field, rope_theta the phase's>},
     "tokenizer": {"config": {"kind": "byte", "eos_token": "<|endoftext|>", ...}, "eos_id": 256,
                   "fingerprint": "byte-v1", "vocab_size": 257}}

`tokenizer.config` is the run's `train.data.tokenizer` (kind byte | bpe | file, eos_token, the file's path,
the BPE's settings) and the rest the identity of the tokenizer trained with: enough to rebuild it (bytes, the
file, the run's saved `tokenizer/` folder, or a BPE retrained identically) and to check what was rebuilt. No
run-dir path is recorded, so a run dir can move. Stdlib only.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from zaya_config.atomic import write_text_atomic
from zaya_config.train_checkpoint.layout import TRAINED_MODEL_NAME

TRAINED_MODEL_FORMAT = "zaya-train-trained-model/1"


class TrainCheckpointError(ValueError):
    """A run dir or step folder that cannot be read as a trained model; the message names the file and the fix."""


@dataclass(frozen=True)
class TrainedModel:
    """The model of one checkpoint step as trained: its config fields, phase, tokenizer, step and tokens."""

    step: int
    model: dict[str, Any]  # the ZayaConfig fields (`ZayaConfig.from_dict` rebuilds it)
    tokenizer: dict[str, Any] = field(default_factory=dict)
    phase: dict[str, Any] | None = None  # index, name, seq_len, rope_theta of the recipe phase
    tokens: int | None = None

    def to_json(self) -> str:
        """The file's text: two-space indents, sorted keys."""
        return json.dumps({"format": TRAINED_MODEL_FORMAT, **asdict(self)}, indent=2, sort_keys=True) + "\n"

    @classmethod
    def from_json(cls, text: str, source: Path | str) -> TrainedModel:
        """Parse a `trained_model.json`; a clear error naming `source` when it is not one."""
        try:
            data = json.loads(text)
        except ValueError as err:
            raise TrainCheckpointError(f"{source}: not JSON ({err}); the step folder is damaged") from None
        if not isinstance(data, dict) or data.get("format") != TRAINED_MODEL_FORMAT:
            raise TrainCheckpointError(f"{source}: not a {TRAINED_MODEL_FORMAT} file; it was not written by zaya-train")
        if not isinstance(data.get("model"), dict) or not isinstance(data.get("step"), int):
            raise TrainCheckpointError(f"{source}: has no `model` table or `step`; the step folder is damaged")
        return cls(
            step=data["step"],
            model=data["model"],
            tokenizer=data.get("tokenizer") or {},
            phase=data.get("phase"),
            tokens=data.get("tokens"),
        )

    @property
    def phase_name(self) -> str | None:
        """Name of the recipe phase the step was in, None when unknown."""
        return (self.phase or {}).get("name")


def write_trained_model(folder: Path, record: TrainedModel, *, durable: bool = True) -> Path:
    """Write `record` as the folder's `trained_model.json`, atomically."""
    return write_text_atomic(Path(folder) / TRAINED_MODEL_NAME, record.to_json(), durable=durable)


def read_trained_model(folder: Path) -> TrainedModel | None:
    """The step folder's `trained_model.json`; None when it has none (written before the file existed)."""
    path = Path(folder) / TRAINED_MODEL_NAME
    if not path.is_file():
        return None
    return TrainedModel.from_json(path.read_text(encoding="utf-8"), path)
