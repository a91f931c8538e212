"""How each state-dict tensor splits for tensor (TP), expert (EP) and pipeline (PP) parallelism: the one
shard-plan vocabulary of the stack (ckpt-reshape reshapes checkpoints by it and knows no ZAYA names).

`parallel_plan(cfg)` maps key patterns (`*` = layer index) to a `ShardSpec`; `hf_parallel_plan(cfg)` is the
same plan under HF `zaya` names. TP splits attention by heads: a rank holds K/tp KV heads and their H/tp
query heads, which keeps the CCA q/k mixing, the per-head grouped conv and the value heads rank-local.
Fused tensors are split per section: each section (q | k | v_current | v_delayed of `attn.qkv`, q | k of
the conv channels, gate | up of the experts) is cut into tp contiguous pieces and rank r takes piece r of
every section; the granule is the rows of one head in each section (half a head's in each value half),
which TP never cuts apart. `column` = output dim split, `row` = input dim split (its output is
all-reduced), `vocab` = the vocabulary rows. EP slices the stacked expert tensors on dim 0 (global expert
id). PP gives each stage a contiguous range of layers; the embedding lives on the first stage, the final
norm and the head on the last. The router and every norm/scale are replicated. TP is limited to
tp | num_key_value_heads (2 for ZAYA1).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from zaya_model.config import ZayaConfig
from zaya_model.errors import ZayaModelError
from zaya_model.hf_keys import key_map

TP_STYLES = ("column", "row", "vocab", "replicate")
PIPELINE_STAGES = ("first", "last")


@dataclass(frozen=True)
class ShardSpec:
    """How one tensor splits across ranks.

    `tp_style` (column | row | vocab | replicate) cuts dim `tp_dim`; a fused tensor's `sections` along it
    are each cut tp ways. `granule`: the rows of `tp_dim` TP may not cut apart (a head's), one per section
    where they differ. `ep_dim`: the global expert id EP cuts. `pipeline_stage`: the stage (first | last)
    of a tensor outside the layer stack; a `layers.<i>` tensor lives on the stage that holds layer i.
    """

    tp_style: str
    tp_dim: int | None = None
    sections: tuple[int, ...] | None = None
    ep_dim: int | None = None
    granule: int | tuple[int, ...] = 1
    pipeline_stage: str = "first"

    def __post_init__(self) -> None:
        if self.tp_style not in TP_STYLES:
            raise ZayaModelError(f"ShardSpec.tp_style = {self.tp_style!r}; allowed: one of {', '.join(TP_STYLES)}")
        if self.pipeline_stage not in PIPELINE_STAGES:
            raise ZayaModelError(
                f"ShardSpec.pipeline_stage = {self.pipeline_stage!r}; allowed: one of {', '.join(PIPELINE_STAGES)}"
            )
        granules = self.granule if isinstance(self.granule, tuple) else (self.granule,)
        if isinstance(self.granule, tuple) and len(self.granule) != len(self.sections or ()):
            raise ZayaModelError(f"ShardSpec.granule = {self.granule}: one granule per section {self.sections}")
        if any(g < 1 for g in granules):
            raise ZayaModelError(f"ShardSpec.granule = {self.granule}; allowed: rows >= 1")

    def section_granules(self) -> tuple[int, ...]:
        """The granule of each section (the whole dim is one section when there are none)."""
        if isinstance(self.granule, tuple):
            return self.granule
        return (self.granule,) * max(len(self.sections or ()), 1)


REPLICATED = ShardSpec("replicate")
LAST_STAGE = ShardSpec("replicate", pipeline_stage="last")


def parallel_plan(cfg: ZayaConfig) -> dict[str, ShardSpec]:
    """Key pattern -> ShardSpec for every tensor of `ZayaForCausalLM(cfg).state_dict()`."""
    q, kv, F, d = cfg.q_size, cfg.kv_size, cfg.moe_intermediate_size, cfg.head_dim
    half = kv // 2  # v_current | v_delayed: half of each value head's rows in each
    qkv = ShardSpec("column", tp_dim=0, sections=(q, kv, half, half), granule=(d, d, max(d // 2, 1), max(d // 2, 1)))
    conv = ShardSpec("column", tp_dim=0, sections=(q, kv), granule=d)
    plan = {
        "embed.weight": ShardSpec("vocab", tp_dim=0),
        "embed_scaling.scale": REPLICATED,
        "embed_scaling.bias": REPLICATED,
        "final_norm.weight": LAST_STAGE,
        "layers.*.attn_norm.weight": REPLICATED,
        "layers.*.moe_norm.weight": REPLICATED,
        "layers.*.attn.qkv.weight": qkv,
        "layers.*.attn.conv_depthwise_weight": conv,
        "layers.*.attn.conv_depthwise_bias": conv,
        "layers.*.attn.conv_grouped_weight": conv,
        "layers.*.attn.conv_grouped_bias": conv,
        "layers.*.attn.key_temperature": ShardSpec("column", tp_dim=0),  # one per KV head
        "layers.*.attn.out.weight": ShardSpec("row", tp_dim=1, granule=d),
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
        plan["layers.*.attn.qkv.bias"] = qkv
        plan["layers.*.attn.out.bias"] = REPLICATED
    # Tied: the head is the embedding (vocab-split); untied: its own column-parallel matrix. On the last stage.
    head_style = "vocab" if cfg.tie_word_embeddings else "column"
    plan["lm_head.weight"] = ShardSpec(head_style, tp_dim=0, pipeline_stage="last")
    if cfg.lm_head_bias:
        plan["lm_head.bias"] = ShardSpec("column", tp_dim=0, pipeline_stage="last")
    return plan


def hf_parallel_plan(cfg: ZayaConfig) -> dict[str, ShardSpec]:
    """`parallel_plan` under HF `zaya` names (`model.layers.*.self_attn.qkv_proj.q_proj.weight` ...): each part
    of a fused tensor gets its section's split (no sections, that section's granule)."""
    plan, hf_plan = parallel_plan(cfg), {}
    for mapping in key_map(cfg):
        spec = spec_for(mapping.ours, plan)
        if mapping.concat_dim is None:
            hf_plan[_layer_pattern(mapping.hf[0])] = spec
            continue
        if spec.tp_dim != mapping.concat_dim or spec.sections != mapping.sizes:  # a plan / key map mismatch
            raise ZayaModelError(
                f"{mapping.ours}: parallel plan sections {spec.sections} (dim {spec.tp_dim}) are not its HF parts "
                f"{mapping.sizes} (dim {mapping.concat_dim})"
            )
        for hf, granule in zip(mapping.hf, spec.section_granules(), strict=True):
            hf_plan[_layer_pattern(hf)] = replace(spec, sections=None, granule=granule)
    hf_plan.setdefault("lm_head.weight", plan["lm_head.weight"])  # tied: HF files may carry the embedding twice
    return hf_plan


_LAYER_INDEX = re.compile(r"(^|\.)layers\.\d+\.")


def _layer_pattern(key: str) -> str:
    return _LAYER_INDEX.sub(r"\1layers.*.", key, count=1)


def spec_for(key: str, plan: dict[str, ShardSpec]) -> ShardSpec:
    """The ShardSpec of a concrete key (`layers.3.attn.qkv.weight`, or an HF name in `hf_parallel_plan`)."""
    pattern = _layer_pattern(key)
    if pattern not in plan:
        raise ZayaModelError(f"no parallel plan entry for {key!r} (pattern {pattern!r})")
    return plan[pattern]
