"""The model config a zaya-train checkpoint was trained under, from the files of its run dir.

A run's `config.yaml` holds the model preset it started from; two things change during the run and must
reach an HF export so that transformers reproduces the checkpoint: the RoPE theta of the recipe phase the
checkpoint was taken in (zaya-train switches theta per phase, e.g. 10k -> 100k at a context extension), and
the special token ids of the run's tokenizer (`tokenizer/tokenizer_config.json`, whose `zaya_tokenizer.eos_id`
separates documents; a byte-level run's EOS is 256, not the preset's). Names follow
`zaya_train.checkpoint.layout` and `zaya_train.data.tokenizer_files`; ckpt-reshape does not import zaya-train.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ckpt_reshape.train_state import load_train_state, train_state_name


def phase_rope_theta(run_config: dict[str, Any], step_folder: Path) -> float | None:
    """RoPE theta of the recipe phase recorded in the step's rank-0 train state; None when unknown."""
    phases = (run_config.get("recipe") or {}).get("phases") or []
    train_file = Path(step_folder) / train_state_name(0)
    if not phases or not train_file.is_file():
        return None
    phase = (load_train_state(train_file).get("progress") or {}).get("phase", -1)
    if isinstance(phase, int) and 0 <= phase < len(phases) and "rope_theta" in phases[phase]:
        return float(phases[phase]["rope_theta"])
    return None


def tokenizer_eos_id(run_dir: Path) -> int | None:
    """EOS id of the run's saved tokenizer; None when the run dir has none."""
    config = Path(run_dir) / "tokenizer" / "tokenizer_config.json"
    if not config.is_file():
        return None
    eos = (json.loads(config.read_text(encoding="utf-8")).get("zaya_tokenizer") or {}).get("eos_id")
    return eos if isinstance(eos, int) else None


def as_trained(cfg, run_config: dict[str, Any], run_dir: Path, step_folder: Path):
    """`cfg` (the run's preset) with the checkpoint's phase theta and the tokenizer's EOS as eos/bos/pad."""
    changes: dict[str, Any] = {}
    theta = phase_rope_theta(run_config, step_folder)
    if theta is not None:
        changes["rope_theta"] = theta
    eos = tokenizer_eos_id(run_dir)
    if eos is not None and 0 <= eos < cfg.vocab_size:
        changes.update(eos_token_id=eos, bos_token_id=eos, pad_token_id=eos)
    return cfg.replace(**changes) if changes else cfg
