"""How each state-dict tensor splits for tensor parallelism (TP) and expert parallelism (EP).

`parallel_plan(cfg)` maps key patterns (`*` = layer index) to a `ShardSpec`. TP splits attention by
heads: a rank holds K/tp KV heads and their H/tp query heads, which keeps the CCA q/k mixing, the
per-head grouped conv and the value heads rank-local. Fused tensors are split per section: each section
(q | k | v of `attn.qkv`, q | k of the conv channels, gate | up of the experts) is cut into tp contiguous
pieces and rank r takes piece r of every section. `column` = output dim split, `row` = input dim split
(its output is all-reduced). EP slices the stacked expert tensors on dim 0 (global expert id).
The router and every norm/scale are replicated. TP is limited to tp | num_key_value_heads (2 for ZAYA1).
"""

from __future__ import annotations

from dataclasses import dataclass

from zaya_model.config import ZayaConfig


@dataclass(frozen=True)
class ShardSpec:
    """tp_style: 'column' | 'row' | 'vocab' | 'replicate'; tp_dim split dim; sections sizes along it."""

    tp_style: str
    tp_dim: int | None = None
    sections: tuple[int, ...] | None = None
    ep_dim: int | None = None


REPLICATED = ShardSpec("replicate")


def parallel_plan(cfg: ZayaConfig) -> dict[str, ShardSpec]:
    """Key pattern -> ShardSpec for every tensor of `ZayaForCausalLM(cfg).state_dict()`."""
    q, kv, F = cfg.q_size, cfg.kv_size, cfg.moe_intermediate_size
    plan = {
        "embed.weight": ShardSpec("vocab", tp_dim=0),
        "embed_scaling.scale": REPLICATED,
        "embed_scaling.bias": REPLICATED,
        "final_norm.weight": REPLICATED,
        "layers.*.attn_norm.weight": REPLICATED,
        "layers.*.moe_norm.weight": REPLICATED,
        "layers.*.attn.qkv.weight": ShardSpec("column", tp_dim=0, sections=(q, kv, kv)),
        "layers.*.attn.conv_depthwise_weight": ShardSpec("column", tp_dim=0, sections=(q, kv)),
        "layers.*.attn.conv_depthwise_bias": ShardSpec("column", tp_dim=0, sections=(q, kv)),
        "layers.*.attn.conv_grouped_weight": ShardSpec("column", tp_dim=0, sections=(q, kv)),
        "layers.*.attn.conv_grouped_bias": ShardSpec("column", tp_dim=0, sections=(q, kv)),
        "layers.*.attn.key_temperature": ShardSpec("column", tp_dim=0),
        "layers.*.attn.out.weight": ShardSpec("row", tp_dim=1),
        "layers.*.moe.experts.gate_up": ShardSpec("column", tp_dim=1, sections=(F, F), ep_dim=0),
        "layers.*.moe.experts.down": ShardSpec("row", tp_dim=2, ep_dim=0),
    }
    for field_name in ("branch_scale", "branch_bias", "residual_scale", "residual_bias"):
        plan[f"layers.*.attn_residual.{field_name}"] = REPLICATED
        plan[f"layers.*.moe_residual.{field_name}"] = REPLICATED
    for leaf in (
        "down.weight",
        "down.bias",
        "depth_scale",
        "norm.weight",
        "fc1.weight",
        "fc1.bias",
        "fc2.weight",
        "fc2.bias",
        "out.weight",
        "balancing_biases",
        "bias_first_moment",
        "bias_second_moment",
        "bias_steps",
    ):
        plan[f"layers.*.moe.router.{leaf}"] = REPLICATED
    if cfg.attention_bias:
        plan["layers.*.attn.qkv.bias"] = ShardSpec("column", tp_dim=0, sections=(q, kv, kv))
        plan["layers.*.attn.out.bias"] = REPLICATED
    # Tied: the head is the embedding (vocab-split); untied: its own column-parallel matrix.
    plan["lm_head.weight"] = ShardSpec("vocab", tp_dim=0) if cfg.tie_word_embeddings else ShardSpec("column", tp_dim=0)
    if cfg.lm_head_bias:
        plan["lm_head.bias"] = ShardSpec("column", tp_dim=0)
    return plan


def spec_for(key: str, plan: dict[str, ShardSpec]) -> ShardSpec:
    """The ShardSpec of a concrete key (`layers.3.attn.qkv.weight`)."""
    parts = key.split(".")
    if len(parts) > 1 and parts[0] == "layers" and parts[1].isdigit():
        parts[1] = "*"
    pattern = ".".join(parts)
    if pattern not in plan:
        from zaya_model.errors import ZayaModelError

        raise ZayaModelError(f"no parallel plan entry for {key!r} (pattern {pattern!r})")
    return plan[pattern]
