"""Parameter, FLOP and decode-traffic accounting from a `ZayaConfig` alone (no model is built).

Convention for the headline numbers: `total` and `active` count the non-embedding parameters, i.e.
without the (tied) embedding / LM-head matrix, as the ZAYA1 paper's "8.3B total / 760M active" does:
zaya1-base gives total 8.30e9 and active 7.53e8 (the paper rounds the latter to 760M; it is 0.9% off).
`total_with_embeddings` / `active_with_embeddings` add the V x D matrix (twice when untied).
Active = all dense parameters + top_k experts per layer (the skip route can only lower it).

FLOPs: 2 per multiply-add. Per token, forward = 2 * (active matmul parameters + the LM head) + attention
scores and values (4 * H * d per attended position and layer; causal: a token at position i attends
i + 1 positions, averaged over the sequence). Training = 3 x forward (backward = 2 x forward).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from zaya_model.config import ZayaConfig


@dataclass(frozen=True)
class ParameterCount:
    """Parameter totals; `by_module` maps a module name to its count over all layers."""

    total: int
    active: int
    embeddings: int
    total_with_embeddings: int
    active_with_embeddings: int
    by_module: dict[str, int] = field(default_factory=dict)


def _per_layer(cfg: ZayaConfig, layer_idx: int) -> dict[str, int]:
    D, C, d, R, E, F = (
        cfg.hidden_size,
        cfg.conv_channels,
        cfg.head_dim,
        cfg.router_hidden_size,
        cfg.num_experts,
        cfg.moe_intermediate_size,
    )
    bias = int(cfg.attention_bias)
    qkv_out = cfg.q_size + 2 * cfg.kv_size
    return {
        "attention.qkv": D * qkv_out + bias * qkv_out,
        "attention.conv": C * cfg.cca_time0 + C + C * d * cfg.cca_time1 + C,
        "attention.key_temperature": cfg.num_key_value_heads,
        "attention.out": cfg.q_size * D + bias * D,
        "router": D * R + R + (R if layer_idx > 0 else 0) + R + 2 * (R * R + R) + R * (E + 1),
        "experts": E * 3 * F * D,
        "norms_and_scales": 2 * D + 8 * D,
    }


def count_parameters(cfg: ZayaConfig) -> ParameterCount:
    """Exact parameter counts of `ZayaForCausalLM(cfg)` (see the module docstring for the convention)."""
    by_module: dict[str, int] = {}
    for i in range(cfg.num_hidden_layers):
        for name, n in _per_layer(cfg, i).items():
            by_module[name] = by_module.get(name, 0) + n
    D, V = cfg.hidden_size, cfg.vocab_size
    by_module["embedding_scaling_and_final_norm"] = 3 * D
    by_module["lm_head_bias"] = V if cfg.lm_head_bias else 0
    embeddings = V * D * (1 if cfg.tie_word_embeddings else 2)
    by_module["embeddings"] = embeddings
    total = sum(by_module.values()) - embeddings
    inactive_experts = (
        cfg.num_hidden_layers * (cfg.num_experts - cfg.num_experts_per_tok) * 3 * cfg.moe_intermediate_size * D
    )
    active = total - inactive_experts
    return ParameterCount(
        total=total,
        active=active,
        embeddings=embeddings,
        total_with_embeddings=total + embeddings,
        active_with_embeddings=active + embeddings,
        by_module=by_module,
    )


def _matmul_params_per_token(cfg: ZayaConfig) -> int:
    """Weights each token multiplies (one expert per slot), including the LM head, excluding the lookup."""
    L, D = cfg.num_hidden_layers, cfg.hidden_size
    layer = _per_layer(cfg, 1)
    dense = layer["attention.qkv"] + layer["attention.conv"] + layer["attention.out"] + layer["router"]
    experts = cfg.num_experts_per_tok * 3 * cfg.moe_intermediate_size * D
    return L * (dense + experts) + cfg.vocab_size * D


def attention_flops_per_token(cfg: ZayaConfig, seq_len: int, causal: bool = True) -> float:
    """Forward FLOPs of QK^T and AV per token, summed over layers, at sequence length seq_len."""
    attended = (seq_len + 1) / 2 if causal else seq_len
    return 4.0 * cfg.num_attention_heads * cfg.head_dim * attended * cfg.num_hidden_layers


def flops_per_token(cfg: ZayaConfig, seq_len: int, training: bool, causal: bool = True) -> float:
    """Model FLOPs per token (forward, or forward + backward when training) at sequence length seq_len."""
    forward = 2.0 * _matmul_params_per_token(cfg) + attention_flops_per_token(cfg, seq_len, causal)
    return 3.0 * forward if training else forward


@dataclass(frozen=True)
class DecodeBytes:
    """Bytes read from memory for one decode step of the whole batch, by kind."""

    expert_weights: float
    dense_weights: float
    kv_cache: float
    conv_and_delayed_state: float
    batch_size: int

    @property
    def total(self) -> float:
        return self.expert_weights + self.dense_weights + self.kv_cache + self.conv_and_delayed_state

    @property
    def per_token(self) -> float:
        """Bytes per generated token (the step's bytes shared by the batch)."""
        return self.total / self.batch_size


def expected_distinct_experts(cfg: ZayaConfig, batch_size: int) -> float:
    """Experts a layer touches for a batch under uniform routing: E (1 - (1 - k/E)^B)."""
    E, k = cfg.num_experts, cfg.num_experts_per_tok
    return E * (1.0 - (1.0 - k / E) ** batch_size)


def decode_bytes_per_token(cfg: ZayaConfig, context_len: int, batch_size: int = 1, dtype_bytes: int = 2) -> DecodeBytes:
    """Weight and state traffic of one decode step at `context_len` past positions (decode rooflines)."""
    L, D = cfg.num_hidden_layers, cfg.hidden_size
    params = count_parameters(cfg)
    expert_one = 3 * cfg.moe_intermediate_size * D
    expert = L * expected_distinct_experts(cfg, batch_size) * expert_one * dtype_bytes
    all_experts = L * cfg.num_experts * expert_one
    head = cfg.vocab_size * D  # the LM head is read whole; embedding lookups read B rows
    dense = (params.total - all_experts - params.by_module["lm_head_bias"] + head + batch_size * D) * dtype_bytes
    kv = L * 2 * cfg.kv_size * context_len * batch_size * dtype_bytes
    state = L * (cfg.conv_state_len * cfg.conv_channels + cfg.kv_size // 2) * batch_size * dtype_bytes
    return DecodeBytes(
        expert_weights=expert, dense_weights=dense, kv_cache=kv, conv_and_delayed_state=state, batch_size=batch_size
    )
