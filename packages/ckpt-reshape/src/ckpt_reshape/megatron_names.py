"""Megatron-Core `torch_dist` checkpoint keys <-> ckpt-reshape's logical names: the one home of that mapping.

Megatron's distributed checkpoint keys are its ShardedTensor keys, not module paths. Every decoder layer's
tensor is one global tensor with the layer as a prepended axis (`decoder.layers.self_attention.linear_qkv.weight`
of shape [num_layers, ...]; each layer's chunk has offset = its global layer number, so the key does not depend
on PP), MoE experts add a second prepended axis of global expert ids (`decoder.layers.mlp.experts.experts.
linear_fc1.weight`: [num_layers, num_experts, ...], whatever EP wrote it). Its layer norms are saved under the
fused-linear names (`input_layernorm` as `self_attention.linear_qkv.layer_norm_weight`). Inside a tensor:
- the fused QKV (`linear_qkv.weight`) is grouped by query group: for each group its q heads, then its k, then
  its v head (rows), so TP ranks hold whole groups and the global tensor is the same for every TP degree;
- the SwiGLU fc1 (`linear_fc1.weight`) is saved by megatron's swiglu factory as [gate (all TP ranks); up (all
  TP ranks)] along its output dim, again the same for every TP degree;
- the optimizer's per-parameter state is `optimizer.state.<exp_avg|exp_avg_sq|...>.<parameter key>`, of the
  parameter's global shape (megatron's `optim_state_to_sharding_state`), its param groups and step in
  `common.pt`.

Logical names (see `index.py`): the layer axis is taken off, so PP placement and layer counting work as for
any checkpoint: `model.decoder.layers.<i>.<rest>` ([num_experts, ...] for experts: dim 0 is the global expert
id, so the generic table's `*.experts.*` rule splits them by EP), `optim.state.decoder.layers.<i>.<rest>.
<state>`, `model.<key>` for the rest (embedding, final norm, output layer), `model.<key>` for the bytes of a
ShardedObject (`..._extra_state/shard_<offsets>_<shape>`), `megatron.common` for `common.pt`. Any other
`optimizer.*` key (a distributed optimizer's flattened buckets) is not converted: `convert` refuses it unless
`--model-only`. How each tensor splits under TP and PP: `megatron_split_table` (from Megatron-LM's `args` in
`common.pt`).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from ckpt_reshape.errors import ReshapeError

MEGATRON_METADATA = "metadata.json"  # {"sharded_backend": "torch_dist", ...}, next to DCP's `.metadata`
COMMON_NAME = "common.pt"
TRACKER_NAME = "latest_checkpointed_iteration.txt"  # a Megatron save folder's pointer to its newest iter_NNNNNNN/
COMMON_ENTRY = "megatron.common"
OPTIMIZER_REFUSAL = "optimizer state not converted, use --model-only"
_STACKED = "decoder.layers."  # keys whose first axis is the global layer number
_OPTIM_STATE = re.compile(r"^optimizer\.state\.([A-Za-z0-9_]+)\.(.+)$")
_LOGICAL_LAYER = re.compile(r"^decoder\.layers\.(\d+)\.(.+)$")


def is_megatron_folder(path: Path) -> bool:
    """A DCP folder that megatron-core's `dist_checkpointing.save` wrote with the `torch_dist` backend."""
    meta = Path(path) / MEGATRON_METADATA
    if not (Path(path).is_dir() and meta.is_file() and (Path(path) / ".metadata").is_file()):
        return False
    try:
        return json.loads(meta.read_text(encoding="utf-8")).get("sharded_backend") == "torch_dist"
    except (ValueError, AttributeError):
        return False


def is_stacked(key: str) -> bool:
    """Whether a Megatron key's first axis is the layer number (a parameter's, or its optimizer state's)."""
    match = _OPTIM_STATE.match(key)
    return (match.group(2) if match else key).startswith(_STACKED)


def param_key(key: str) -> tuple[str, str | None] | None:
    """(parameter key, optimizer state name or None) of a tensor key; None for an unconverted optimizer key."""
    match = _OPTIM_STATE.match(key)
    if match:
        return match.group(2), match.group(1)
    if key.startswith("optimizer."):
        return None
    return key, None


def logical_name(key: str, layer: int | None) -> str | None:
    """The logical name of (layer `layer` of) Megatron tensor `key`; None for an optimizer key not converted."""
    found = param_key(key)
    if found is None:
        return None
    fqn, state = found
    if layer is not None:
        fqn = f"{_STACKED}{layer}.{fqn[len(_STACKED) :]}"
    return f"model.{fqn}" if state is None else f"optim.state.{fqn}.{state}"


def logical_path(name: str) -> tuple[str, ...]:
    """The nested state-dict path of a logical tensor (`("model", fqn)`, `("optim", "state", fqn, state)`), so a
    torch.save export keeps Megatron's dotted keys whole."""
    if name.startswith("optim.state."):
        fqn, _, state = name[len("optim.state.") :].rpartition(".")
        return ("optim", "state", fqn, state)
    return ("model", name[len("model.") :])


def megatron_key(name: str) -> tuple[str, int | None] | None:
    """Inverse of `logical_name`: (Megatron key, layer or None); None when a logical tensor has no Megatron key."""
    if name.startswith("model."):
        fqn, state = name[len("model.") :], None
    elif name.startswith("optim.state."):
        fqn, _, state = name[len("optim.state.") :].rpartition(".")
        if not fqn:
            return None
    else:
        return None
    layer = None
    match = _LOGICAL_LAYER.match(fqn)
    if match:
        layer, fqn = int(match.group(1)), _STACKED + match.group(2)
    return (fqn if state is None else f"optimizer.state.{state}.{fqn}"), layer


def object_name(key: str) -> str:
    """The logical name of a ShardedObject entry (its bytes are carried as they are)."""
    return f"model.{key}"


def object_key(name: str) -> str | None:
    """Inverse of `object_name` (None for an entry with no place in a Megatron checkpoint)."""
    return name[len("model.") :] if name.startswith("model.") and "/shard_" in name else None


def resolve_megatron_root(path: Path) -> Path:
    """A Megatron save folder (with `latest_checkpointed_iteration.txt`) stands for the iteration it names
    (`iter_<7 digits>/`, or `release/`), as megatron's own loader reads it."""
    tracker = Path(path) / TRACKER_NAME
    if not tracker.is_file() or (Path(path) / ".metadata").exists():
        return Path(path)
    text = tracker.read_text(encoding="utf-8").strip()
    if text != "release" and not text.isdigit():
        raise ReshapeError(
            f"{tracker}: holds {text!r}, not an iteration number or 'release'; fix it or pass the folder"
        )
    folder = Path(path) / ("release" if text == "release" else f"iter_{int(text):07d}")
    if not folder.is_dir():
        raise ReshapeError(
            f"{tracker}: names iteration {text}, but {folder} does not exist; pass an existing iter_ folder"
        )
    return folder


def megatron_args(folder: Path) -> dict | None:
    """The model arguments Megatron-LM keeps in `common.pt` (its argparse Namespace `args`), as a dict; None
    when there are none or they are not plain data (read with `torch.load(weights_only=True)`, the Namespace
    allowed: attribute values only, no code)."""
    import argparse

    import torch

    file = Path(folder) / COMMON_NAME
    if not file.is_file():
        return None
    try:
        with torch.serialization.safe_globals([argparse.Namespace]):
            common = torch.load(file, weights_only=True)
    except Exception:  # anything else in it: no TP plan, the rest converts as ever
        return None
    args = common.get("args") if isinstance(common, dict) else None
    return vars(args) if isinstance(args, argparse.Namespace) else None


def megatron_split_table(args: dict | None):
    """How Megatron's GPT tensors split under TP and PP, under their logical names (the global layouts of the
    module docstring): QKV by whole query groups, the SwiGLU fc1 as its gate and up halves, each cut TP ways,
    the row-parallel projections along their input dim, the vocabulary along dim 0, the output layer and the
    final norm on the last pipeline stage, experts by global expert id. The QKV and projection granules need
    the model's heads (Megatron-LM's `args` in common.pt); without them the table has no TP rules for those.
    """
    from ckpt_reshape.splits import SplitSpec, SplitTable

    args = args or {}
    heads, groups = args.get("num_attention_heads"), args.get("num_query_groups") or args.get("num_attention_heads")
    head_dim = args.get("kv_channels") or (args["hidden_size"] // heads if heads and args.get("hidden_size") else None)
    gated = bool(args.get("swiglu") or args.get("gated_linear_unit"))
    ffn, expert_ffn = args.get("ffn_hidden_size"), args.get("moe_ffn_hidden_size") or args.get("ffn_hidden_size")

    def fc1(width: int | None, dim: int, expert: bool) -> SplitSpec:
        """fc1 is cut TP ways along its output dim: the gate and up halves each, when SwiGLU (known from args)."""
        if not ({"swiglu", "gated_linear_unit"} & set(args)) or (gated and not width):
            return SplitSpec(expert=expert)  # gated or not is unknown: no TP rule
        return SplitSpec(tp_dim=dim, tp_kind="column", tp_sections=(width, width) if gated else None, expert=expert)

    rules = [
        ("embedding.word_embeddings.weight", SplitSpec(tp_dim=0, tp_kind="vocab")),
        ("output_layer.weight", SplitSpec(tp_dim=0, tp_kind="column", pp_place="last")),
        ("decoder.final_layernorm.*", SplitSpec(pp_place="last")),
        ("*.mlp.experts.experts.linear_fc1.weight", fc1(expert_ffn, 1, expert=True)),
        ("*.mlp.experts.experts.linear_fc2.weight", SplitSpec(tp_dim=2, tp_kind="row", expert=True)),
        ("*.mlp.experts.*", SplitSpec(expert=True)),
        ("*.mlp.linear_fc1.weight", fc1(ffn, 0, expert=False)),
        ("*.mlp.linear_fc2.weight", SplitSpec(tp_dim=1, tp_kind="row")),
    ]
    if heads and groups and head_dim:
        rules += [
            ("*.self_attention.linear_qkv.weight",
             SplitSpec(tp_dim=0, tp_kind="column", tp_granule=(heads // groups + 2) * head_dim)),
            ("*.self_attention.linear_proj.weight", SplitSpec(tp_dim=1, tp_kind="row", tp_granule=head_dim)),
        ]  # fmt: skip
    known = (
        "with the heads of common.pt's args" if heads and head_dim else "no QKV / projection TP: common.pt has no args"
    )
    return SplitTable(rules, source=f"megatron_names.megatron_split_table ({known})")
