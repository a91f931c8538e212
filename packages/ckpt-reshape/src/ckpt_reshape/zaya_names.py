"""The bridge to zaya-model: its shard plan, its HF key map and its config. ckpt-reshape knows no ZAYA tensor
names of its own; it recognises a ZAYA checkpoint by two of them and asks zaya-model for the rest.
zaya-model (the `ckpt-reshape[zaya]` extra) is imported when a checkpoint needs it (`zaya_extra`).
"""

from __future__ import annotations

import json
from pathlib import Path

from ckpt_reshape.errors import ReshapeError
from ckpt_reshape.index import CheckpointIndex
from ckpt_reshape.names import IDENTITY, HfKeyMap, HfPart
from ckpt_reshape.splits import SplitSpec, SplitTable, table_from_plan
from ckpt_reshape.zaya_extra import zaya_model

_OURS_MARKERS = ("attn.qkv.weight", "moe.experts.gate_up")
_HF_MARKERS = ("qkv_proj.q_proj.weight", "mlp.experts.gate_up_proj")


def is_zaya_native(index: CheckpointIndex) -> bool:
    """Names are zaya-model's own (`layers.<i>.attn.qkv.weight` ...)."""
    return any(marker in name for name in index.tensors for marker in _OURS_MARKERS)


def looks_like_hf_zaya(index: CheckpointIndex) -> bool:
    """Names are HF ZAYA's (`model.layers.<i>.self_attn.qkv_proj.q_proj.weight` ...)."""
    return any(marker in name for name in index.tensors for marker in _HF_MARKERS)


def resolve_model_config(spec: str | dict | Path | None, index: CheckpointIndex | None = None):
    """A `ZayaConfig` from a preset name, a config.json path, a dict, or the checkpoint's own HF config."""
    if spec is None:  # another model's own config.json is not a ZayaConfig (and needs no zaya-model)
        hf = (index.hf_config if index else None) or {}
        if not hf or hf.get("model_type", "zaya") != "zaya":
            return None
        return zaya_model().ZayaConfig.from_hf_config(hf)
    if hasattr(spec, "to_hf_config"):
        return spec
    model = zaya_model()
    if isinstance(spec, dict):
        return model.ZayaConfig.from_hf_config(spec)
    path = Path(spec)
    if path.is_file():
        return model.ZayaConfig.from_hf_config(json.loads(path.read_text(encoding="utf-8")))
    try:
        return model.ZayaConfig.from_preset(str(spec))
    except Exception as err:
        raise ReshapeError(f"--model-config {spec!r}: neither a config.json file nor a zaya preset ({err})") from err


def run_dir_model_config(src: Path):
    """The model config of a zaya-train run's checkpoint (`src`: the run's `checkpoints/` or a step folder) as
    trained at that step: its `trained_model.json`, else the run's `config.yaml` (`zaya_run`); None if neither."""
    from ckpt_reshape.zaya_run import as_trained, trained_model_for

    record = trained_model_for(src)
    return None if record is None else as_trained(record, Path(src))


def zaya_key_map(cfg) -> HfKeyMap:
    """zaya-model's HF key map for `cfg`, as `HfPart` lists (fused tensors become several parts)."""
    mapped: dict[str, list[HfPart]] = {}
    for m in zaya_model().hf_keys.key_map(cfg):
        if m.concat_dim is None:
            mapped[m.ours] = [HfPart(m.hf[0])]
            continue
        parts, start = [], 0
        for hf, size in zip(m.hf, m.sizes, strict=True):
            parts.append(HfPart(hf, m.concat_dim, start, size))
            start += size
        mapped[m.ours] = parts
    ignored = {"lm_head.weight"} if cfg.tie_word_embeddings else set()
    return HfKeyMap(mapped, ignored, source="zaya_model.hf_keys")


def key_map_for(index: CheckpointIndex, cfg) -> HfKeyMap:
    """The HF key map to use for a checkpoint: zaya-model's for ZAYA (needs a config), else identity."""
    if not (is_zaya_native(index) or (index.hf_config or {}).get("model_type") == "zaya"):
        return IDENTITY
    if cfg is None:
        raise ReshapeError(
            "this is a zaya-model checkpoint without a model config; pass --model-config PRESET|config.json "
            "(e.g. zaya1-tiny) so its fused tensors can be mapped to HF keys"
        )
    return zaya_key_map(cfg)


def model_config_for(index: CheckpointIndex, src: Path, spec: str | dict | Path | None = None):
    """The model config a conversion uses: `spec` if given, else the checkpoint's own HF config, else (for a
    zaya-train run's `checkpoints/`) the run's `config.yaml`; None when there is none."""
    cfg = resolve_model_config(spec, index)
    if cfg is None and spec is None and is_zaya_native(index):
        cfg = run_dir_model_config(src)
    return cfg


def default_split_table(index: CheckpointIndex, cfg=None) -> SplitTable:
    """zaya-model's shard plan for a ZAYA checkpoint (its own names or HF's), else the generic table.

    Without a model config (none given, none in the checkpoint) the plan is that of zaya-model's default
    config; sections that do not fit the tensors then stop the conversion and ask for `--model-config`.
    """
    native, hf = is_zaya_native(index), looks_like_hf_zaya(index)
    if not (native or hf):
        return generic_table()
    model = zaya_model()
    plan_cfg = cfg or model.ZayaConfig()
    if native:
        return table_from_plan(model.parallel_plan(plan_cfg), "zaya_model.parallel_plan")
    return table_from_plan(model.hf_parallel_plan(plan_cfg), "zaya_model.hf_parallel_plan")


def generic_table() -> SplitTable:
    """Any other model: stacked tensors under an `experts` module are split by global expert id; no TP."""
    from ckpt_reshape.torchtitan_names import EXPERTS_PATTERN

    experts = SplitSpec(expert=True)
    return SplitTable(
        [("*.experts.*", experts), (EXPERTS_PATTERN, experts)],
        source="generic (EP for `experts.*` and torchtitan's `routed_experts.*`, no TP)",
    )
