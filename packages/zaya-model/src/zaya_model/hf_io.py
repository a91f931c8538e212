"""Load and save Hugging Face `zaya` checkpoints (config.json + safetensors, single file or sharded).

Loading is strict: missing, unexpected or mis-shaped tensors fail with one `ZayaModelError` that lists
all of them under their HF names. Files are written atomically (temp name, fsync, rename).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import torch
from zaya_config.atomic import write_file_atomic, write_text_atomic

from zaya_model.config import ZayaConfig
from zaya_model.errors import ZayaModelError
from zaya_model.hf_keys import OURS_ONLY_SUFFIXES, from_hf_tensors, key_map, to_hf_tensors
from zaya_model.model import ZayaForCausalLM

SINGLE_FILE = "model.safetensors"
INDEX_FILE = "model.safetensors.index.json"


def read_hf_folder(folder: str | os.PathLike[str]) -> tuple[dict[str, Any], dict[str, torch.Tensor]]:
    """(config.json dict, all tensors) of a HF folder; sharded folders are read through their index."""
    from safetensors.torch import load_file

    root = Path(folder)
    config_path = root / "config.json"
    if not config_path.is_file():
        raise ZayaModelError(f"{root}: no config.json; a HF zaya folder holds config.json and *.safetensors")
    hf_config = json.loads(config_path.read_text())
    if (root / INDEX_FILE).is_file():
        weight_map = json.loads((root / INDEX_FILE).read_text()).get("weight_map", {})
        shards = sorted(set(weight_map.values()))
    elif (root / SINGLE_FILE).is_file():
        shards = [SINGLE_FILE]
    else:
        raise ZayaModelError(f"{root}: neither {SINGLE_FILE} nor {INDEX_FILE} found")
    tensors: dict[str, torch.Tensor] = {}
    for shard in shards:
        if not (root / shard).is_file():
            raise ZayaModelError(f"{root}: shard {shard} named in {INDEX_FILE} is missing")
        tensors.update(load_file(str(root / shard)))
    return hf_config, tensors


def load_hf(
    path_or_state_dict: str | os.PathLike[str] | dict[str, torch.Tensor], config: ZayaConfig | None = None
) -> ZayaForCausalLM:
    """A `ZayaForCausalLM` from a HF folder or a HF-keyed state dict (then `config` is required)."""
    if isinstance(path_or_state_dict, dict):
        if config is None:
            raise ZayaModelError("load_hf(state_dict) needs config=ZayaConfig(...) (a state dict carries no dims)")
        hf_tensors = path_or_state_dict
    else:
        hf_config, hf_tensors = read_hf_folder(path_or_state_dict)
        name = str(hf_config.get("_name_or_path") or Path(path_or_state_dict).name)
        config = config or ZayaConfig.from_hf_config(hf_config, name=name)
    model = ZayaForCausalLM(config)
    load_hf_state_dict(model, hf_tensors)
    return model


def load_hf_state_dict(model: ZayaForCausalLM, hf_tensors: dict[str, torch.Tensor]) -> None:
    """Copy HF tensors into `model` after checking that keys and shapes match exactly."""
    config = model.config
    ours, unexpected = from_hf_tensors(hf_tensors, config)
    expected = {m.ours: m for m in key_map(config)}
    target = model.state_dict()
    missing = sorted(h for o, m in expected.items() if o not in ours for h in m.hf if h not in hf_tensors)
    misshaped = [
        f"{'+'.join(expected[o].hf)}: checkpoint {tuple(t.shape)}, model {tuple(target[o].shape)}"
        for o, t in ours.items()
        if tuple(t.shape) != tuple(target[o].shape)
    ]
    problems = []
    if missing:
        problems.append(f"missing keys ({len(missing)}): {', '.join(missing)}")
    if unexpected:
        problems.append(f"unexpected keys ({len(unexpected)}): {', '.join(unexpected)}")
    if misshaped:
        problems.append(f"mis-shaped tensors ({len(misshaped)}): {'; '.join(misshaped)}")
    if problems:
        raise ZayaModelError(
            f"checkpoint does not fit a zaya model of config {config.name!r}: "
            + " | ".join(problems)
            + ". Check that config.json belongs to these weights."
        )
    with torch.no_grad():
        for key, tensor in ours.items():
            target[key].copy_(tensor)


def to_hf_state_dict(model: ZayaForCausalLM) -> dict[str, torch.Tensor]:
    """Our weights under HF `zaya` keys (loads strictly into transformers' ZayaForCausalLM)."""
    state = {k: v for k, v in model.state_dict().items() if not k.endswith(OURS_ONLY_SUFFIXES)}
    return to_hf_tensors(state, model.config)


def save_hf(model: ZayaForCausalLM, folder: str | os.PathLike[str], max_shard_bytes: int | None = None) -> Path:
    """Write config.json + safetensors (sharded with an index when over max_shard_bytes), atomically."""
    from safetensors.torch import save_file

    root = Path(folder)
    root.mkdir(parents=True, exist_ok=True)
    tensors = to_hf_state_dict(model)
    if model.config.tie_word_embeddings:
        tensors.pop("lm_head.weight")  # safetensors stores no aliases; HF re-ties it on load
    tensors = {k: v.detach().contiguous().cpu() for k, v in tensors.items()}
    shards: list[dict[str, torch.Tensor]] = [{}]
    size = 0
    for key in sorted(tensors):
        nbytes = tensors[key].numel() * tensors[key].element_size()
        if max_shard_bytes is not None and shards[-1] and size + nbytes > max_shard_bytes:
            shards.append({})
            size = 0
        shards[-1][key] = tensors[key]
        size += nbytes
    config_text = json.dumps(model.config.to_hf_config(), indent=2)
    write_text_atomic(root / "config.json", config_text)
    if len(shards) == 1:
        write_file_atomic(root / SINGLE_FILE, lambda p: save_file(shards[0], str(p), metadata={"format": "pt"}))
        return root
    names = [f"model-{i + 1:05d}-of-{len(shards):05d}.safetensors" for i in range(len(shards))]
    for name, shard in zip(names, shards, strict=True):
        write_file_atomic(root / name, lambda p, s=shard: save_file(s, str(p), metadata={"format": "pt"}))
    index = {
        "metadata": {"total_size": sum(t.numel() * t.element_size() for t in tensors.values())},
        "weight_map": {k: n for n, s in zip(names, shards, strict=True) for k in s},
    }
    write_text_atomic(root / INDEX_FILE, json.dumps(index, indent=2))
    return root
