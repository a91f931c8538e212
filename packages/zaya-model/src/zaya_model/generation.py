"""Autoregressive generation with the ZAYA cache: one prefill, then one-token steps.

Left padding works because CCA zeroes padding inputs (an all-zero input is exactly what the causal convs
and the delayed value see before the first token) and positions count real tokens only
(cumsum(mask) - 1), so a padded prompt continues exactly as the same prompt alone.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch

from zaya_model.errors import ZayaModelError

if TYPE_CHECKING:
    from zaya_model.model import ZayaForCausalLM


def sample_next(
    logits_BV: torch.Tensor, temperature: float, top_p: float, generator: torch.Generator | None
) -> torch.Tensor:
    """Greedy at temperature 0; otherwise nucleus sampling at `temperature` over the top-p mass."""
    if temperature <= 0.0:
        return logits_BV.argmax(dim=-1)
    probs = torch.softmax(logits_BV.float() / temperature, dim=-1)
    if top_p < 1.0:
        sorted_probs, sorted_ids = probs.sort(dim=-1, descending=True)
        mass_before = sorted_probs.cumsum(dim=-1) - sorted_probs
        sorted_probs = sorted_probs.masked_fill(mass_before >= top_p, 0.0)
        probs = torch.zeros_like(probs).scatter_(-1, sorted_ids, sorted_probs)
    return torch.multinomial(probs, 1, generator=generator).squeeze(-1)


def generate_tokens(
    model: ZayaForCausalLM,
    input_ids: torch.Tensor,
    max_new_tokens: int,
    temperature: float = 0.0,
    top_p: float = 1.0,
    attention_mask: torch.Tensor | None = None,
    eos_token_id: int | None = None,
    generator: torch.Generator | None = None,
) -> torch.Tensor:
    """See `ZayaForCausalLM.generate`."""
    if max_new_tokens < 0:
        raise ZayaModelError(f"max_new_tokens must be >= 0, got {max_new_tokens}")
    if not 0.0 < top_p <= 1.0:
        raise ZayaModelError(f"top_p must be in (0, 1], got {top_p}")
    B, T = input_ids.shape
    mask = torch.ones_like(input_ids) if attention_mask is None else attention_mask.to(input_ids.dtype)
    if mask.shape != input_ids.shape:
        raise ZayaModelError(f"attention_mask shape {tuple(mask.shape)} differs from input_ids {(B, T)}")
    was_training = model.training
    model.eval()  # no router load counting, no dropout-like training behaviour while generating
    try:
        cache = model.new_cache(B, T + max_new_tokens)
        positions = (mask.cumsum(dim=-1) - 1).clamp_min(0)
        logits = model(input_ids, attention_mask=mask, position_ids=positions, cache=cache)[:, -1]
        out = [input_ids]
        finished = torch.zeros(B, dtype=torch.bool, device=input_ids.device)
        next_pos = positions[:, -1:] + 1
        for step in range(max_new_tokens):
            token = sample_next(logits, temperature, top_p, generator)
            if eos_token_id is not None:
                token = torch.where(finished, torch.full_like(token, eos_token_id), token)
                finished |= token == eos_token_id
            out.append(token[:, None])
            if step == max_new_tokens - 1 or (eos_token_id is not None and bool(finished.all())):
                break
            mask = torch.cat((mask, torch.ones_like(mask[:, :1])), dim=1)
            logits = model(token[:, None], attention_mask=mask, position_ids=next_pos, cache=cache)[:, -1]
            next_pos = next_pos + 1
        return torch.cat(out, dim=1)
    finally:
        model.train(was_training)
