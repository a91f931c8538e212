"""`ZayaForCausalLM.generate`: a `ZayaDecoder` made for the request (static cache, device sampling, a CUDA
graph on CUDA), one prompt pass, then one-token steps.

Left padding works because CCA zeroes padding inputs (an all-zero input is exactly what the causal convs
and the delayed value see before the first token) and positions count real tokens only
(cumsum(mask) - 1), so a padded prompt continues exactly as the same prompt alone.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch

from zaya_model.decoding import ZayaDecoder
from zaya_model.errors import ZayaModelError

if TYPE_CHECKING:
    from zaya_model.model import ZayaForCausalLM


def generate_tokens(
    model: ZayaForCausalLM,
    input_ids: torch.Tensor,
    max_new_tokens: int,
    temperature: float = 0.0,
    top_p: float = 1.0,
    attention_mask: torch.Tensor | None = None,
    eos_token_id: int | None = None,
    generator: torch.Generator | None = None,
    **decoder_options: Any,
) -> torch.Tensor:
    """See `ZayaForCausalLM.generate`."""
    if max_new_tokens < 0:
        raise ZayaModelError(f"max_new_tokens must be >= 0, got {max_new_tokens}")
    if input_ids.ndim != 2:
        raise ZayaModelError(f"input_ids must be [batch, seq], got shape {tuple(input_ids.shape)}")
    B, T = input_ids.shape
    decoder = ZayaDecoder(
        model,
        B,
        T + max_new_tokens,
        temperature=temperature,
        top_p=top_p,
        eos_token_id=eos_token_id,
        generator=generator,
        **decoder_options,
    )
    return decoder.generate(input_ids, max_new_tokens, attention_mask)
