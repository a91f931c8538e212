"""Next-token choice on the device: greedy, or temperature + top-p (nucleus) sampling, with no host sync.

Sampling draws by the exponential race: argmax_v p_v / q_v with q_v ~ Exp(1) picks v with probability
p_v, like `torch.multinomial`, but is one fixed-shape argmax (capturable in a CUDA graph, where the
default CUDA generator's offsets are handled by the graph). Which settings are valid: `request.check_sampling`.
"""

from __future__ import annotations

import torch


def sample_tokens(
    logits_BV: torch.Tensor, temperature: float, top_p: float, generator: torch.Generator | None = None
) -> torch.Tensor:
    """Token ids [B]: argmax at temperature 0; else a draw from softmax(logits / temperature) restricted to
    the smallest set of most likely tokens whose mass reaches top_p."""
    if temperature <= 0.0:
        return logits_BV.argmax(dim=-1)
    probs = torch.softmax(logits_BV.float() / temperature, dim=-1)
    if top_p < 1.0:
        sorted_probs, sorted_ids = probs.sort(dim=-1, descending=True)
        mass_before = sorted_probs.cumsum(dim=-1) - sorted_probs
        sorted_probs = sorted_probs.masked_fill(mass_before >= top_p, 0.0)
        probs = torch.zeros_like(probs).scatter_(-1, sorted_ids, sorted_probs)
    race = torch.empty_like(probs).exponential_(generator=generator).clamp_min_(torch.finfo(probs.dtype).tiny)
    return (probs / race).argmax(dim=-1)
