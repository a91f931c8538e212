"""Next-token cross-entropy over a large vocabulary (262k for ZAYA1) in token chunks.

The LM head dominates ZAYA1's FLOPs at small depth and its fp32 logits dominate activation memory
(B*T*V*4 bytes). Computing head + loss per chunk keeps one chunk of logits alive at a time; compiled,
the upcast and log-softmax fuse with the head's output instead of round-tripping fp32 logits.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

CHUNK_TOKENS = 4096


def chunked_cross_entropy(
    hidden_ND: torch.Tensor,
    weight_VD: torch.Tensor,
    bias_V: torch.Tensor | None,
    labels_N: torch.Tensor,
    ignore_index: int = -100,
    chunk_tokens: int = CHUNK_TOKENS,
) -> torch.Tensor:
    """Mean CE of softmax(hidden @ weight.T + bias) against labels, ignoring `ignore_index`."""
    total = hidden_ND.new_zeros((), dtype=torch.float32)
    for start in range(0, hidden_ND.shape[0], chunk_tokens):
        logits = F.linear(hidden_ND[start : start + chunk_tokens], weight_VD, bias_V).float()
        total = total + F.cross_entropy(
            logits, labels_N[start : start + chunk_tokens], ignore_index=ignore_index, reduction="sum"
        )
    return total / (labels_N != ignore_index).sum().clamp_min(1)
