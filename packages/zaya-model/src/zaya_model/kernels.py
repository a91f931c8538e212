"""Which kernels the RMSNorms and the LM head + loss run on: PyTorch's (the reference) or liger-kernel's Triton.

`ZayaConfig.kernels` (validated there, with the missing extra named) picks them: "torch" (default; what every CPU test and the HF parity check run),
"liger" (both fused), or one of them alone ("liger_norm", "liger_loss", so a benchmark can time each change).
liger-kernel is the optional extra `zaya-model[kernels]`; its kernels are Triton and run on CUDA only, so a
CPU tensor always takes the PyTorch path, whatever the config says.

Semantics against the reference (measured by tests/test_kernels_gpu.py on a GPU):
- RMSNorm: liger's "llama" casting computes the inverse RMS in fp32 as `ZayaRMSNorm` does, but multiplies the
  normalised fp32 row by the weight before the cast to the weight's dtype, where ZayaRMSNorm casts first. With
  fp32 weights (the Trainer's master weights under autocast) the two agree to fp32 rounding; with bf16 weights
  the output differs by at most one bf16 rounding of the normalised value.
- LM head + loss: liger's fused linear cross-entropy writes only bf16 logit chunks and overwrites each with its
  gradient in one Triton pass (the reference's compiled chunk softmax upcasts the chunk to fp32); the weight
  gradient is accumulated in fp32 over chunks as the reference does, then handed back in the weight's
  compute dtype. The loss is the mean over non-ignored labels; an all-ignored batch gives nan (the reference
  gives 0).
"""

from __future__ import annotations

import math
from typing import Literal

import torch

from zaya_model.loss import CHUNK_TOKENS

_USES = {"torch": (), "liger": ("norm", "loss"), "liger_norm": ("norm",), "liger_loss": ("loss",)}


def uses_liger(kernels: str, op: Literal["norm", "loss"]) -> bool:
    """Whether `op` runs on liger's kernel under this choice (CUDA tensors only; see the module doc)."""
    return op in _USES[kernels]


# ---------------------------------------------------------------------------------------------- RMSNorm
# liger's forward and backward as one opaque op each, so torch.compile'd blocks keep one graph around them
# (dynamo would otherwise trace into liger's autograd.Function and its launch helpers).
@torch.library.custom_op("zaya::liger_rms_norm", mutates_args=())
def _liger_rms_norm_op(x: torch.Tensor, weight: torch.Tensor, eps: float) -> tuple[torch.Tensor, torch.Tensor]:
    from liger_kernel.ops.rms_norm import rms_norm_forward

    y, _, rstd, *_ = rms_norm_forward(x.contiguous(), weight, eps, 0.0, "llama", None)
    return y, rstd


@_liger_rms_norm_op.register_fake
def _(x: torch.Tensor, weight: torch.Tensor, eps: float) -> tuple[torch.Tensor, torch.Tensor]:
    rows = math.prod(x.shape[:-1])
    return torch.empty_like(x, memory_format=torch.contiguous_format), x.new_empty(rows, dtype=torch.float32)


@torch.library.custom_op("zaya::liger_rms_norm_backward", mutates_args=())
def _liger_rms_norm_backward_op(
    grad_y: torch.Tensor, x: torch.Tensor, weight: torch.Tensor, rstd: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    from liger_kernel.ops.rms_norm import rms_norm_backward
    from liger_kernel.ops.utils import calculate_settings

    block, warps = calculate_settings(x.shape[-1])
    grad_x, grad_w = rms_norm_backward(
        grad_y.contiguous(), x.contiguous().view(-1, x.shape[-1]), weight, rstd, 0.0, 0, block, warps, False, None
    )
    return grad_x.view(x.shape), grad_w


@_liger_rms_norm_backward_op.register_fake
def _(
    grad_y: torch.Tensor, x: torch.Tensor, weight: torch.Tensor, rstd: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    return torch.empty_like(x, memory_format=torch.contiguous_format), torch.empty_like(weight)


def _rms_setup(ctx, inputs, output) -> None:
    x, weight, _ = inputs
    ctx.save_for_backward(x, weight, output[1])


def _rms_backward(ctx, grad_y, _grad_rstd):
    x, weight, rstd = ctx.saved_tensors
    grad_x, grad_w = _liger_rms_norm_backward_op(grad_y, x, weight, rstd)
    return grad_x, grad_w, None


_liger_rms_norm_op.register_autograd(_rms_backward, setup_context=_rms_setup)


def liger_rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    """RMSNorm on liger's fused Triton forward and backward, in ZayaRMSNorm's output dtype (the weight's)."""
    y, _ = _liger_rms_norm_op(x, weight, eps)
    return y if y.dtype == weight.dtype else y.to(weight.dtype)


# ---------------------------------------------------------------------------------------------- LM head + loss
def _chunk_mem_const(tokens: int, hidden: int, vocab: int, chunk_tokens: int) -> int:
    """liger's chunk budget (logits <= const x tokens x hidden) that gives chunks of about `chunk_tokens`:
    its default (1) cuts ZAYA1's 262k vocabulary into 128-token chunks, each re-reading the fp32 weight
    gradient (2 GiB at zaya1-base) to add its share."""
    chunks = max(1, math.ceil(tokens / chunk_tokens))
    return max(1, math.ceil(vocab / (hidden * chunks)))


def liger_linear_cross_entropy(
    hidden_ND: torch.Tensor,
    weight_VD: torch.Tensor,
    bias_V: torch.Tensor | None,
    labels_N: torch.Tensor,
    ignore_index: int = -100,
    chunk_tokens: int = CHUNK_TOKENS,
) -> torch.Tensor:
    """`loss.fused_linear_cross_entropy`'s contract on liger's fused linear cross-entropy (see the module doc)."""
    from liger_kernel.transformers.functional import liger_fused_linear_cross_entropy

    device = hidden_ND.device.type
    dtype = torch.get_autocast_dtype(device) if torch.is_autocast_enabled(device) else hidden_ND.dtype
    with torch.autocast(device, enabled=False):  # liger's mm writes into a buffer of the input's dtype
        bias = bias_V.to(dtype) if bias_V is not None else None
        return liger_fused_linear_cross_entropy(
            hidden_ND.to(dtype),
            weight_VD.to(dtype),
            labels_N,
            bias=bias,
            ignore_index=ignore_index,
            accum_dtype=torch.float32,
            chunk_mem_const=_chunk_mem_const(hidden_ND.shape[0], hidden_ND.shape[1], weight_VD.shape[0], chunk_tokens),
        )


def token_loss(kernels: str, reference):
    """The model's `token_loss`: liger's on CUDA tensors when chosen, else `reference` (the torch path)."""
    if not uses_liger(kernels, "loss"):
        return reference

    def pick(hidden_ND, weight_VD, bias_V, labels_N, ignore_index=-100):
        if hidden_ND.is_cuda:
            return liger_linear_cross_entropy(hidden_ND, weight_VD, bias_V, labels_N, ignore_index)
        return reference(hidden_ND, weight_VD, bias_V, labels_N, ignore_index)

    return pick
