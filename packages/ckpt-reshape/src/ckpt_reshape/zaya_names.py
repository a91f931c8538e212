"""The bridge to zaya-model: its parallel plan and HF key map, used whenever zaya-model is importable.

zaya-model is an optional dependency (`ckpt-reshape[zaya]`); without it the built-in ZAYA1 split table in
`splits.py` is used for checkpoints whose names look like ZAYA, and HF names are taken as they are.
"""

from __future__ import annotations

import importlib
from functools import cache

from ckpt_reshape.index import CheckpointIndex
from ckpt_reshape.names import HfNameMap
from ckpt_reshape.splits import SplitTable, table_from_plan, zaya_builtin_table

_ZAYA_MARKERS = ("qkv_proj.q_proj.weight", "mlp.experts.gate_up_proj", "self_attn.qkv_proj")


def _zaya_module(name: str):
    try:
        return importlib.import_module(name)
    except ImportError:
        return None


@cache
def zaya_name_map() -> HfNameMap | None:
    """HF key map from `zaya_model.hf_keys`, None when zaya-model (or its map) is not there."""
    keys = _zaya_module("zaya_model.hf_keys")
    if keys is None:
        return None
    to_hf = getattr(keys, "to_hf_key", None) or getattr(keys, "to_hf", None)
    from_hf = getattr(keys, "from_hf_key", None) or getattr(keys, "from_hf", None)
    if callable(to_hf) and callable(from_hf):
        return HfNameMap(to_hf, from_hf, source="zaya_model.hf_keys")
    return None


def looks_like_zaya(index: CheckpointIndex) -> bool:
    """Whether the checkpoint's parameter names are ZAYA1's."""
    return any(marker in name for name in index.tensors for marker in _ZAYA_MARKERS)


def head_dim_of(index: CheckpointIndex) -> int:
    """Attention head size from the HF config when known (the unit TP may not cut), else 1."""
    config = index.hf_config or {}
    return int(config.get("head_dim") or 1)


def default_split_table(index: CheckpointIndex) -> SplitTable:
    """zaya-model's parallel plan, else the built-in ZAYA1 table for ZAYA names, else a generic table."""
    if not looks_like_zaya(index):
        return SplitTable(source="generic (no TP splits; FSDP and PP only)")
    model = _zaya_module("zaya_model")
    plan_fn = getattr(model, "parallel_plan", None) if model is not None else None
    config_cls = getattr(model, "ZayaConfig", None) if model is not None else None
    if callable(plan_fn) and config_cls is not None and index.hf_config is None:
        try:
            plan = plan_fn(config_cls())
        except Exception:  # a plan that cannot be built for defaults falls back to the builtin table
            plan = None
        if isinstance(plan, dict) and plan:
            return table_from_plan(plan, source="zaya_model.parallel_plan")
    return zaya_builtin_table(head_dim_of(index))
