"""What one decode or prefill step of a batch moves through memory, per layer and per sequence.

`decode_bytes_per_token` gives a step's totals by kind; a memory simulator needs them split the way the
model lays them out: dense weights per layer, the LM head and embedding rows once, whole experts, and per
sequence the K/V read and written and the conv / delayed-value state. `step_traffic` is that split, so the
model's layout is known in one place (services/memstudy hands it to memsim's `LlmStepShape` as it is).

Decode: one token per sequence attends `ctx` cached positions, every weight the batch routes to is read,
the cached K/V is read and one position's K/V written, the state read and rewritten. Prefill: `ctx` prompt
tokens per sequence go through the weights at once (read once for all `batch * ctx` tokens), the prompt's
K/V and the final state are written, nothing cached is read. The K/V allocation per sequence is sized for
the longer of the model's context and the step's own.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from zaya_model.accounting import decode_bytes_per_token, flops_per_token
from zaya_model.config import ZayaConfig
from zaya_model.errors import ZayaModelError

PHASES = ("decode", "prefill")


@dataclass(frozen=True)
class StepTraffic:
    """Bytes one step of the batch moves (per layer, per sequence), its total by `decode_bytes_per_token`,
    and its model FLOPs. The fields up to `state_read` are memsim's `LlmStepShape` fields, by name."""

    phase: str
    layers: int
    batch_size: int
    tokens: int  # tokens the step produces (decode: batch_size) or ingests (prefill: batch_size x ctx)
    dense_bytes_per_layer: int
    head_bytes: int  # LM head read whole and the step's embedding rows, once per step
    expert_bytes: int  # one expert's weights
    experts_per_layer: int
    active_experts_per_layer: float  # distinct experts the step reads per layer, expected under uniform routing
    kv_read_bytes_per_sequence: int  # per layer
    kv_write_bytes_per_sequence: int  # per layer
    kv_capacity_bytes_per_sequence: int  # per layer: the allocation
    state_bytes_per_sequence: int  # per layer
    state_read: bool  # decode reads the state before rewriting it; prefill only writes it
    accounting_bytes: float  # the whole step, as `decode_bytes_per_token` accounts it
    flops: float  # model FLOPs of the whole step

    def per_layer(self) -> dict[str, Any]:
        """The per-layer and per-sequence fields (everything but the step's totals)."""
        fields = asdict(self)
        del fields["accounting_bytes"], fields["flops"]
        return fields


def step_traffic(cfg: ZayaConfig, phase: str, batch: int, ctx: int, dtype_bytes: int = 2) -> StepTraffic:
    """One `phase` step of `batch` sequences: decode at `ctx` cached positions, or a prefill of `ctx` tokens."""
    if phase not in PHASES:
        raise ZayaModelError(f"step_traffic phase = {phase!r}; allowed: one of {', '.join(map(repr, PHASES))}")
    if batch < 1 or dtype_bytes < 1:
        raise ZayaModelError(f"step_traffic batch = {batch}, dtype_bytes = {dtype_bytes}; both must be >= 1")
    if ctx < (0 if phase == "decode" else 1):
        raise ZayaModelError(f"step_traffic ctx = {ctx}; a decode needs >= 0 cached positions, a prefill >= 1 token")
    return _decode(cfg, batch, ctx, dtype_bytes) if phase == "decode" else _prefill(cfg, batch, ctx, dtype_bytes)


def _decode(cfg: ZayaConfig, B: int, ctx: int, dt: int) -> StepTraffic:
    L = cfg.num_hidden_layers
    step = decode_bytes_per_token(cfg, ctx, B, dt)
    per_position = decode_bytes_per_token(cfg, 1, B, dt).kv_cache / (L * B)
    expert = 3 * cfg.moe_intermediate_size * cfg.hidden_size * dt
    head = (cfg.vocab_size + B) * cfg.hidden_size * dt  # LM head read whole + B embedding rows
    return StepTraffic(
        phase="decode", layers=L, batch_size=B, tokens=B,
        dense_bytes_per_layer=round((step.dense_weights - head) / L), head_bytes=head,
        expert_bytes=expert, experts_per_layer=cfg.num_experts,
        active_experts_per_layer=step.expert_weights / (L * expert),
        kv_read_bytes_per_sequence=round(step.kv_cache / (L * B)), kv_write_bytes_per_sequence=round(per_position),
        kv_capacity_bytes_per_sequence=round(per_position * max(cfg.max_position_embeddings, ctx + 1)),
        state_bytes_per_sequence=round(step.conv_and_delayed_state / (L * B)), state_read=True,
        accounting_bytes=step.total,
        flops=B * flops_per_token(cfg, ctx + 1, training=False, causal=False),  # one token attends ctx + 1
    )  # fmt: skip


def _prefill(cfg: ZayaConfig, B: int, P: int, dt: int) -> StepTraffic:
    L = cfg.num_hidden_layers
    weights = decode_bytes_per_token(cfg, 0, B * P, dt)  # B * P tokens through the weights at once
    written = decode_bytes_per_token(cfg, P, B, dt)
    per_position = written.kv_cache / (L * B * P)
    expert = 3 * cfg.moe_intermediate_size * cfg.hidden_size * dt
    head = (cfg.vocab_size + B * P) * cfg.hidden_size * dt
    return StepTraffic(
        phase="prefill", layers=L, batch_size=B, tokens=B * P,
        dense_bytes_per_layer=round((weights.dense_weights - head) / L), head_bytes=head,
        expert_bytes=expert, experts_per_layer=cfg.num_experts,
        active_experts_per_layer=weights.expert_weights / (L * expert),
        kv_read_bytes_per_sequence=0, kv_write_bytes_per_sequence=round(written.kv_cache / (L * B)),
        kv_capacity_bytes_per_sequence=round(per_position * max(cfg.max_position_embeddings, P)),
        state_bytes_per_sequence=round(written.conv_and_delayed_state / (L * B)), state_read=False,
        accounting_bytes=weights.expert_weights + weights.dense_weights + written.kv_cache
        + written.conv_and_delayed_state,
        flops=B * P * flops_per_token(cfg, P, training=False),
    )  # fmt: skip
