"""The pieces of one decode step as pure functions of fixed-shape tensors, and the mode decoding runs in.

`ZayaDecoder` calls (or `torch.compile`s) these three: the embedding and RoPE of one token per row, one layer
against the static cache (its state written back at the cache's slot), and the head. Kept as module-level
functions so that one compiled code object serves every layer (a graph variant per layer shape, not per
position: the slot and positions are device tensors).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import TYPE_CHECKING

import torch
from torch import nn

from zaya_model.layers import rope_cos_sin

if TYPE_CHECKING:
    from zaya_model.model import ZayaDecoderLayer, ZayaForCausalLM


def decode_inputs(
    model: ZayaForCausalLM, tokens_B: torch.Tensor, positions_B: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(fp32 residual stream [B, 1, D], RoPE cos, sin [B, 1, rotary_dim]) of one token per row."""
    cos, sin = rope_cos_sin(positions_B[:, None], model.rope_inv_freq)
    return model.embed_scaling(model.embed(tokens_B[:, None])), cos, sin


def decode_layer(
    layer: ZayaDecoderLayer,
    resid_B1D: torch.Tensor,
    router_state: torch.Tensor | None,
    cos: torch.Tensor,
    sin: torch.Tensor,
    keys: torch.Tensor,
    values: torch.Tensor,
    conv_state: torch.Tensor,
    delayed_value: torch.Tensor,
    valid_BS: torch.Tensor,
    slot: torch.Tensor,
    gather_max_pairs: int,
) -> tuple[torch.Tensor, torch.Tensor]:
    """One layer of one step, then its state written into the static buffers at `slot` ([1], device)."""
    resid_B1D, router_state, (key, value, qk, delayed) = layer.decode(
        resid_B1D, router_state, (cos, sin), (keys, values, conv_state, delayed_value), valid_BS, gather_max_pairs
    )
    keys.index_copy_(2, slot, key)
    values.index_copy_(2, slot, value)
    conv_state.copy_(qk)
    delayed_value.copy_(delayed)
    return resid_B1D, router_state


def decode_logits(model: ZayaForCausalLM, resid_B1D: torch.Tensor) -> torch.Tensor:
    """fp32 logits [B, V] of the last residual stream."""
    return model.lm_head(model.final_norm(resid_B1D))[:, 0].float()


@contextlib.contextmanager
def evaluating(model: nn.Module) -> Iterator[None]:
    """Eval mode (no router load counting) and no autograd, restoring the mode afterwards."""
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            yield
    finally:
        model.train(was_training)
