"""`ZayaForCausalLM.generate`: a `ZayaDecoder` made for the request (static cache, device sampling, a CUDA
graph on CUDA), one prompt pass, then one-token steps.

A model whose parameters are sharded (FSDP2: every rank holds a slice and the module hooks gather them
around each call) cannot run the decoder's direct per-layer step, which bypasses those hooks; it decodes
through the ordinary forward with the dynamic `ZayaCache` instead, one call per token, all ranks together.

Left padding works because CCA zeroes padding inputs (an all-zero input is exactly what the causal convs
and the delayed value see before the first token) and positions count real tokens only (`request.py`), so
a padded prompt continues exactly as the same prompt alone. Both paths check the request and fill after EOS
through the same functions (`request.py`, `eos.py`), so they return the same tokens.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch

from zaya_model.decode.decoder import ZayaDecoder
from zaya_model.decode.eos import all_finished, fill_after_eos
from zaya_model.decode.request import check_request, check_sampling, prompt_mask, prompt_positions
from zaya_model.decode.sampling import sample_tokens
from zaya_model.decode.step import evaluating

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
    check_request(input_ids, max_new_tokens)
    check_sampling(temperature, top_p)
    if _has_sharded_parameters(model):
        return _generate_through_forward(
            model, input_ids, max_new_tokens, temperature, top_p, attention_mask, eos_token_id, generator
        )
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


def _has_sharded_parameters(model: torch.nn.Module) -> bool:
    try:
        from torch.distributed.tensor import DTensor
    except ImportError:  # a torch without distributed support cannot shard either
        return False
    return any(isinstance(p, DTensor) for p in model.parameters())


def _generate_through_forward(
    model: ZayaForCausalLM,
    input_ids: torch.Tensor,
    max_new_tokens: int,
    temperature: float,
    top_p: float,
    attention_mask: torch.Tensor | None,
    eos_token_id: int | None,
    generator: torch.Generator | None,
) -> torch.Tensor:
    """The same tokens as the decoder, one `model(...)` call per token (module hooks fire)."""
    B, T = input_ids.shape
    mask = prompt_mask(input_ids, attention_mask)
    with evaluating(model):
        cache = model.new_cache(B, T + max_new_tokens)
        positions = prompt_positions(mask)
        logits = model(input_ids, attention_mask=mask, position_ids=positions, cache=cache)[:, -1]
        out, finished, next_pos = (
            [input_ids],
            torch.zeros(B, dtype=torch.bool, device=input_ids.device),
            positions[:, -1:] + 1,
        )
        for step in range(max_new_tokens):
            token = fill_after_eos(sample_tokens(logits, temperature, top_p, generator), finished, eos_token_id)
            out.append(token[:, None])
            if step == max_new_tokens - 1 or all_finished(finished, eos_token_id):
                break
            mask = torch.cat((mask, torch.ones_like(mask[:, :1])), dim=1)
            logits = model(token[:, None], attention_mask=mask, position_ids=next_pos, cache=cache)[:, -1]
            next_pos = next_pos + 1
        return torch.cat(out, dim=1)
