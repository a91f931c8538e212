"""What a generate request must satisfy, and how its prompt is read: the one home of the request checks.

`ZayaForCausalLM.generate`, `ZayaDecoder` (prefill, generate, stream) and the forward path of sharded models
all take (input_ids, attention_mask, max_new_tokens, temperature, top_p); each checks them here, so a bad
request fails with the same one-line `ZayaModelError` whichever path it takes.

Prompts are left-padded: `attention_mask` marks the real tokens, and positions count real tokens only
(cumsum(mask) - 1), so a padded prompt continues exactly as the same prompt alone.
"""

from __future__ import annotations

import torch

from zaya_model.errors import ZayaModelError


def check_sampling(temperature: float, top_p: float) -> None:
    """Reject settings that cannot sample, naming the argument."""
    if not temperature >= 0.0:
        raise ZayaModelError(f"temperature must be >= 0 (0 = greedy), got {temperature}")
    if not 0.0 < top_p <= 1.0:
        raise ZayaModelError(f"top_p must be in (0, 1], got {top_p}")


def check_request(
    input_ids: torch.Tensor, max_new_tokens: int, max_len: int | None = None, batch_size: int | None = None
) -> None:
    """max_new_tokens >= 0, input_ids [B, T] (B = batch_size when given), and, for a decoder of `max_len`
    positions, room for the prompt and the new tokens."""
    if max_new_tokens < 0:
        raise ZayaModelError(f"max_new_tokens must be >= 0, got {max_new_tokens}")
    if input_ids.ndim != 2 or (batch_size is not None and input_ids.shape[0] != batch_size):
        rows = "batch" if batch_size is None else f"batch_size={batch_size}"
        raise ZayaModelError(f"input_ids must be [{rows}, seq], got shape {tuple(input_ids.shape)}")
    T = input_ids.shape[1]
    if max_len is not None and T + max_new_tokens > max_len:
        raise ZayaModelError(
            f"a prompt of {T} tokens + max_new_tokens ({max_new_tokens}) exceed the decoder's max_len {max_len}; "
            "make a decoder with a larger max_len"
        )


def prompt_mask(input_ids: torch.Tensor, attention_mask: torch.Tensor | None) -> torch.Tensor:
    """The prompt's mask in the ids' dtype (None: every token real), checked to have the ids' shape."""
    mask = torch.ones_like(input_ids) if attention_mask is None else attention_mask.to(input_ids.dtype)
    if mask.shape != input_ids.shape:
        raise ZayaModelError(
            f"attention_mask shape {tuple(mask.shape)} differs from input_ids {tuple(input_ids.shape)}"
        )
    return mask


def prompt_positions(mask_BT: torch.Tensor) -> torch.Tensor:
    """RoPE positions [B, T] of a left-padded prompt: real tokens count from 0, padding sits at 0."""
    return (mask_BT.cumsum(dim=-1) - 1).clamp_min(0)
