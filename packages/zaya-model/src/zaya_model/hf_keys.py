"""The state-dict key map between zaya_model and Hugging Face `zaya` (`ZayaForCausalLM`).

Every tensor maps 1:1 except our fused CCA projection `layers.{i}.attn.qkv.{weight,bias}`, which is the
dim-0 concatenation of HF's q_proj, k_proj, v_proj_current, v_proj_delayed (in that order). Stacked
expert tensors keep HF's layout: `moe.experts.gate_up` [E, 2F, D] (gate rows then up rows) <->
`mlp.experts.gate_up_proj`, `moe.experts.down` [E, D, F] <-> `mlp.experts.down_proj`; the global expert
id is dim 0 in both. Ours-only buffers (the balancing step's moments) are not exported.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from zaya_model.config import ZayaConfig

# Ours-only persistent buffers: kept in our checkpoints, absent from HF's.
OURS_ONLY_SUFFIXES = ("moe.router.bias_first_moment", "moe.router.bias_second_moment", "moe.router.bias_steps")

_LAYER_PAIRS = (
    ("attn_norm.weight", "input_layernorm.weight"),
    ("moe_norm.weight", "post_attention_layernorm.weight"),
    ("attn.conv_depthwise_weight", "self_attn.qkv_proj.conv_qk_depthwise.weight"),
    ("attn.conv_depthwise_bias", "self_attn.qkv_proj.conv_qk_depthwise.bias"),
    ("attn.conv_grouped_weight", "self_attn.qkv_proj.conv_qk_grouped.weight"),
    ("attn.conv_grouped_bias", "self_attn.qkv_proj.conv_qk_grouped.bias"),
    ("attn.key_temperature", "self_attn.qk_norm.temp"),
    ("attn.out.weight", "self_attn.o_proj.weight"),
    ("moe.router.down.weight", "mlp.gate.down_proj.weight"),
    ("moe.router.down.bias", "mlp.gate.down_proj.bias"),
    ("moe.router.norm.weight", "mlp.gate.router_mlp.norm.weight"),
    ("moe.router.fc1.weight", "mlp.gate.router_mlp.fc1.weight"),
    ("moe.router.fc1.bias", "mlp.gate.router_mlp.fc1.bias"),
    ("moe.router.fc2.weight", "mlp.gate.router_mlp.fc2.weight"),
    ("moe.router.fc2.bias", "mlp.gate.router_mlp.fc2.bias"),
    ("moe.router.out.weight", "mlp.gate.router_mlp.out_proj.weight"),
    ("moe.router.balancing_biases", "mlp.gate.balancing_biases"),
    ("moe.experts.gate_up", "mlp.experts.gate_up_proj"),
    ("moe.experts.down", "mlp.experts.down_proj"),
)
_RESIDUAL_FIELDS = (
    ("branch_scale", "hidden_states_scale"),
    ("branch_bias", "hidden_states_bias"),
    ("residual_scale", "residual_scale"),
    ("residual_bias", "residual_bias"),
)
_HF_QKV_PARTS = ("q_proj", "k_proj", "v_proj_current", "v_proj_delayed")


@dataclass(frozen=True)
class KeyMapping:
    """Our key <-> one HF key, or several HF keys concatenated along `concat_dim` with these `sizes`."""

    ours: str
    hf: tuple[str, ...]
    concat_dim: int | None = None
    sizes: tuple[int, ...] | None = None


def key_map(config: ZayaConfig) -> list[KeyMapping]:
    """The full key map for a config (layer 0's router has no depth scale)."""
    maps: list[KeyMapping] = [
        KeyMapping("embed.weight", ("model.embed_tokens.weight",)),
        KeyMapping("embed_scaling.scale", ("model.input_hidden_states_scale",)),
        KeyMapping("embed_scaling.bias", ("model.input_hidden_states_bias",)),
        KeyMapping("final_norm.weight", ("model.norm.weight",)),
    ]
    if not config.tie_word_embeddings:
        maps.append(KeyMapping("lm_head.weight", ("lm_head.weight",)))
    if config.lm_head_bias:
        maps.append(KeyMapping("lm_head.bias", ("lm_head.bias",)))
    half = config.kv_size // 2
    qkv_sizes = (config.q_size, config.kv_size, half, half)
    for i in range(config.num_hidden_layers):
        ours, hf = f"layers.{i}.", f"model.layers.{i}."
        maps += [KeyMapping(ours + a, (hf + b,)) for a, b in _LAYER_PAIRS]
        for our_mod, hf_mod in (
            ("attn_residual", "post_attention_residual_scale"),
            ("moe_residual", "post_mlp_residual_scale"),
        ):
            maps += [KeyMapping(f"{ours}{our_mod}.{a}", (f"{hf}{hf_mod}.{b}",)) for a, b in _RESIDUAL_FIELDS]
        if i > 0:
            maps.append(KeyMapping(ours + "moe.router.depth_scale", (hf + "mlp.gate.router_states_scale",)))
        for leaf in ("weight", "bias") if config.attention_bias else ("weight",):
            parts = tuple(f"{hf}self_attn.qkv_proj.{p}.{leaf}" for p in _HF_QKV_PARTS)
            maps.append(KeyMapping(f"{ours}attn.qkv.{leaf}", parts, concat_dim=0, sizes=qkv_sizes))
            if config.attention_bias and leaf == "bias":
                maps.append(KeyMapping(ours + "attn.out.bias", (hf + "self_attn.o_proj.bias",)))
    return maps


def ours_to_hf_keys(config: ZayaConfig) -> dict[str, tuple[str, ...]]:
    """Our key -> the HF key(s) it becomes."""
    return {m.ours: m.hf for m in key_map(config)}


def hf_to_ours_keys(config: ZayaConfig) -> dict[str, str]:
    """HF key -> our key it is (part of)."""
    return {h: m.ours for m in key_map(config) for h in m.hf}


def to_hf_tensors(state: dict[str, torch.Tensor], config: ZayaConfig) -> dict[str, torch.Tensor]:
    """Our state dict -> HF tensors (fused tensors split; ours-only buffers dropped; tied head added)."""
    out: dict[str, torch.Tensor] = {}
    for m in key_map(config):
        tensor = state[m.ours]
        if m.concat_dim is None:
            out[m.hf[0]] = tensor
        else:
            out.update(zip(m.hf, tensor.split(list(m.sizes or ()), dim=m.concat_dim), strict=True))
    if config.tie_word_embeddings:
        out["lm_head.weight"] = out["model.embed_tokens.weight"]
    return out


def from_hf_tensors(hf: dict[str, torch.Tensor], config: ZayaConfig) -> tuple[dict[str, torch.Tensor], list[str]]:
    """HF tensors -> (our state dict of what was present, HF keys we do not know)."""
    ours: dict[str, torch.Tensor] = {}
    used: set[str] = set()
    for m in key_map(config):
        if all(h in hf for h in m.hf):
            parts = [hf[h] for h in m.hf]
            ours[m.ours] = parts[0] if m.concat_dim is None else torch.cat(parts, dim=m.concat_dim)
            used.update(m.hf)
    if config.tie_word_embeddings:
        used.add("lm_head.weight")  # HF state dicts may carry the tied head; it is the embedding
    unknown = sorted(k for k in hf if k not in used)
    return ours, unknown
