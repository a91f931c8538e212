"""Small building blocks: RMSNorm, ZAYA residual scaling, partial RoPE.

Shape suffixes used across the package: B batch, T new tokens, S attended positions (past + new),
D model width, H query heads, K KV heads, d head dim, C conv channels (q|k), E experts, F expert width,
R router width, N routed (token, slot) pairs.
"""

from __future__ import annotations

import torch
from torch import nn

from zaya_model.kernels import liger_rms_norm, uses_liger


class ZayaRMSNorm(nn.Module):
    """RMSNorm computed in fp32; the result is cast to the weight dtype before scaling (as HF does).

    With `kernels` choosing liger's norm (zaya_model/kernels.py), CUDA inputs run its fused Triton forward and
    backward instead (the kernels module says where its rounding differs)."""

    def __init__(self, dim: int, eps: float, kernels: str = "torch") -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.eps = eps
        self.fused = uses_liger(kernels, "norm")

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.fused and x.is_cuda:
            return liger_rms_norm(x, self.weight, self.eps)
        x32 = x.float()
        normed = x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * normed.to(self.weight.dtype)


class ZayaResidualScaling(nn.Module):
    """ZAYA's residual update: (branch + b_branch) * s_branch + (residual + b_res) * s_res.

    The learned scale and bias on both the branch and the residual let the model re-weight the fp32
    residual stream per channel at every sub-layer; the sum is kept in fp32.
    """

    def __init__(self, dim: int) -> None:
        super().__init__()
        self.branch_scale = nn.Parameter(torch.ones(dim))
        self.branch_bias = nn.Parameter(torch.zeros(dim))
        self.residual_scale = nn.Parameter(torch.ones(dim))
        self.residual_bias = nn.Parameter(torch.zeros(dim))

    def forward(self, branch: torch.Tensor, residual: torch.Tensor) -> torch.Tensor:
        out = (branch + self.branch_bias) * self.branch_scale + (residual + self.residual_bias) * self.residual_scale
        return out.float()


class ZayaEmbeddingScaling(nn.Module):
    """Learned per-channel scale and bias on the token embeddings: (e + bias) * scale, then fp32."""

    def __init__(self, dim: int) -> None:
        super().__init__()
        self.scale = nn.Parameter(torch.ones(dim))
        self.bias = nn.Parameter(torch.zeros(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return ((x + self.bias) * self.scale).float()


def rope_inv_freq(rotary_dim: int, theta: float) -> torch.Tensor:
    """Inverse frequencies of the rotated sub-space, fp32: 1 / theta^(2i / rotary_dim)."""
    return 1.0 / (theta ** (torch.arange(0, rotary_dim, 2, dtype=torch.float32) / rotary_dim))


def rope_cos_sin(position_ids_BT: torch.Tensor, inv_freq: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """cos/sin of shape [B, T, rotary_dim] (the half-frequencies repeated twice, rotate-half layout)."""
    angles = position_ids_BT.float()[..., None] * inv_freq.float()
    angles = torch.cat((angles, angles), dim=-1)
    return angles.cos(), angles.sin()


def apply_partial_rope(x_BTHd: torch.Tensor, cos_BTr: torch.Tensor, sin_BTr: torch.Tensor) -> torch.Tensor:
    """Rotate the first rotary_dim channels of every head (rotate-half convention); pass the rest through."""
    r = cos_BTr.shape[-1]
    cos = cos_BTr[:, :, None, :].to(x_BTHd.dtype)
    sin = sin_BTr[:, :, None, :].to(x_BTHd.dtype)
    x_rot, x_pass = x_BTHd[..., :r], x_BTHd[..., r:]
    half = r // 2
    rotated = torch.cat((-x_rot[..., half:], x_rot[..., :half]), dim=-1)
    return torch.cat((x_rot * cos + rotated * sin, x_pass), dim=-1)
