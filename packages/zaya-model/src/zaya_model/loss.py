"""Next-token cross-entropy over a large vocabulary (262k for ZAYA1), fused with the LM head, in token chunks.

The LM head dominates ZAYA1's FLOPs at small depth (3.2 of 4.3 GFLOP per token at 8 layers) and its fp32
logits dominate activation memory (B*T*V*4 bytes). `fused_linear_cross_entropy` never keeps more than one
chunk of logits alive. When a gradient is wanted it computes the head's gradients in the forward pass, chunk
by chunk (softmax minus one-hot, times the weight and the hidden states), and backward only scales them:
6 N D V FLOPs in all, where autograd over a chunked loss must either keep every chunk's logits or recompute
the head in backward (8 N D V). `chunk_fn`, the per-chunk softmax/gradient, is where compilation pays:
compiled, it is one pass over the bf16 logits instead of several over fp32 copies.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F

CHUNK_TOKENS = 4096

ChunkFn = Callable[[torch.Tensor, torch.Tensor, int, torch.Tensor], tuple[torch.Tensor, torch.Tensor]]


def cross_entropy_chunk(
    logits_NV: torch.Tensor, labels_N: torch.Tensor, ignore_index: int, grad_scale: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """(sum of CE over the chunk in fp32, d(sum CE * grad_scale)/d logits in the logits' dtype)."""
    x = logits_NV.float()
    valid = labels_N != ignore_index
    target = torch.where(valid, labels_N, 0)
    lse = torch.logsumexp(x, dim=-1)
    target_logit = x.gather(1, target[:, None]).squeeze(1)
    loss = torch.where(valid, lse - target_logit, 0.0).sum()
    scale = torch.where(valid, grad_scale, 0.0)[:, None]
    grad = torch.exp(x - lse[:, None]) * scale  # softmax minus one-hot, times the mean's 1/count
    grad = grad.scatter_add(1, target[:, None], -scale)
    return loss, grad.to(logits_NV.dtype)


_FP32_OUTPUT_GEMM = {"cuda": True}  # whether this torch build has addmm with an fp32 output for bf16 inputs


def _add_product_fp32(acc: torch.Tensor, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """acc + a @ b with acc fp32: on CUDA one GEMM that accumulates into fp32 (no low-precision product to upcast
    and add, which moves 4.5x the weight-gradient bytes per chunk); elsewhere the product, upcast."""
    if acc.is_cuda and a.dtype != torch.float32 and _FP32_OUTPUT_GEMM["cuda"]:
        try:
            return torch.addmm(acc, a, b, out_dtype=torch.float32)
        except (RuntimeError, TypeError, NotImplementedError):
            _FP32_OUTPUT_GEMM["cuda"] = False
    return acc.add_((a @ b).float())


def _compute_dtype(t: torch.Tensor) -> torch.dtype:
    if torch.is_autocast_enabled(t.device.type):
        return torch.get_autocast_dtype(t.device.type)
    return t.dtype


class _FusedLinearCrossEntropy(torch.autograd.Function):
    """Mean CE of (hidden @ weight.T + bias) with the head's gradients computed in forward (see the module doc)."""

    @staticmethod
    def forward(ctx, hidden_ND, weight_VD, bias_V, labels_N, ignore_index, chunk_tokens, chunk_fn):  # type: ignore[override]
        dtype = _compute_dtype(hidden_ND)
        with torch.autocast(hidden_ND.device.type, enabled=False):
            h_ND, w_VD = hidden_ND.to(dtype), weight_VD.to(dtype)
            b_V = bias_V.to(dtype) if bias_V is not None else None
            inv_count = 1.0 / (labels_N != ignore_index).sum().clamp_min(1).to(torch.float32)
            loss = torch.zeros((), dtype=torch.float32, device=h_ND.device)
            grad_h = torch.empty_like(h_ND)
            grad_w = (
                torch.zeros(w_VD.shape, dtype=torch.float32, device=w_VD.device) if ctx.needs_input_grad[1] else None
            )
            grad_b = torch.zeros(w_VD.shape[0], dtype=torch.float32, device=w_VD.device) if b_V is not None else None
            for start in range(0, h_ND.shape[0], chunk_tokens):
                h = h_ND[start : start + chunk_tokens]
                chunk_loss, grad_logits = chunk_fn(F.linear(h, w_VD, b_V), labels_N[start : start + chunk_tokens],
                                                   ignore_index, inv_count)  # fmt: skip
                loss = loss + chunk_loss
                grad_h[start : start + chunk_tokens] = grad_logits @ w_VD
                if grad_w is not None:
                    grad_w = _add_product_fp32(grad_w, grad_logits.T, h)
                if grad_b is not None:
                    grad_b += grad_logits.float().sum(0)
        ctx.save_for_backward(grad_h, grad_w, grad_b)
        ctx.dtypes = (hidden_ND.dtype, weight_VD.dtype, bias_V.dtype if bias_V is not None else None)
        return loss * inv_count

    @staticmethod
    def backward(ctx, grad_out):  # type: ignore[override]
        grad_h, grad_w, grad_b = ctx.saved_tensors
        h_dtype, w_dtype, b_dtype = ctx.dtypes
        scale = grad_out.to(torch.float32)
        dh = (grad_h.float() * scale).to(h_dtype)
        dw = (grad_w * scale).to(w_dtype) if grad_w is not None else None
        db = (grad_b * scale).to(b_dtype) if grad_b is not None and ctx.needs_input_grad[2] else None
        return dh, dw, db, None, None, None, None


def fused_linear_cross_entropy(
    hidden_ND: torch.Tensor,
    weight_VD: torch.Tensor,
    bias_V: torch.Tensor | None,
    labels_N: torch.Tensor,
    ignore_index: int = -100,
    chunk_tokens: int = CHUNK_TOKENS,
    chunk_fn: ChunkFn = cross_entropy_chunk,
) -> torch.Tensor:
    """Mean CE of softmax(hidden @ weight.T + bias) against labels, ignoring `ignore_index`; fp32 scalar.

    With grad enabled the head's gradients are computed here (see the module doc); without, it is the plain
    chunked forward. Under autocast the head runs in the autocast dtype, the softmax in fp32.
    """
    if torch.is_grad_enabled() and (hidden_ND.requires_grad or weight_VD.requires_grad):
        return _FusedLinearCrossEntropy.apply(
            hidden_ND, weight_VD, bias_V, labels_N, ignore_index, chunk_tokens, chunk_fn
        )
    return chunked_cross_entropy(hidden_ND, weight_VD, bias_V, labels_N, ignore_index, chunk_tokens)


def chunked_cross_entropy(
    hidden_ND: torch.Tensor,
    weight_VD: torch.Tensor,
    bias_V: torch.Tensor | None,
    labels_N: torch.Tensor,
    ignore_index: int = -100,
    chunk_tokens: int = CHUNK_TOKENS,
) -> torch.Tensor:
    """Mean CE with plain autograd, one chunk of logits at a time: the reference the fused path is tested on."""
    total = hidden_ND.new_zeros((), dtype=torch.float32)
    for start in range(0, hidden_ND.shape[0], chunk_tokens):
        logits = F.linear(hidden_ND[start : start + chunk_tokens], weight_VD, bias_V).float()
        total = total + F.cross_entropy(
            logits, labels_N[start : start + chunk_tokens], ignore_index=ignore_index, reduction="sum"
        )
    return total / (labels_N != ignore_index).sum().clamp_min(1)
