"""Muon: momentum orthogonalised by a Newton-Schulz iteration, for 2-D weight matrices (Jordan et al. 2024).

Parameters that are not matrices (embeddings, norms, biases, router vectors, conv kernels) take an AdamW
step inside the same optimizer, so one object, one state dict and one learning rate serve the model: the
Muon update is scaled by `rms_scale * sqrt(max(rows, cols))`, which gives it the RMS of a typical AdamW
update (Liu et al. 2025, "Muon is scalable for LLM training"), so the AdamW learning rate carries over.

Stacked matrices (expert weights `[E, rows, cols]`) are orthogonalised per matrix. Under FSDP2 a
parameter is a sharded DTensor: its momentum stays sharded, and the matrix is gathered for the
iteration (every rank computes the same result and keeps its own shard).
"""

import math
from collections.abc import Iterable
from typing import Any

import torch
from torch.optim import Optimizer

# Quintic coefficients tuned for speed over exactness: singular values land in about [0.7, 1.2].
QUINTIC = (3.4445, -4.7750, 2.0315)
# The classical cubic iteration converges to the exact polar factor U V^T (slowly).
CUBIC = (1.5, -0.5, 0.0)


def newton_schulz(
    g: torch.Tensor, steps: int = 5, coefficients: tuple[float, float, float] = QUINTIC, eps: float = 1e-7
) -> torch.Tensor:
    """Approximate U V^T of the SVD G = U S V^T over the last two dims, without an SVD."""
    a, b, c = coefficients
    dtype = torch.bfloat16 if g.is_cuda else torch.float32
    x = g.to(dtype)
    transposed = x.size(-2) > x.size(-1)
    if transposed:
        x = x.mT
    x = x / (x.norm(dim=(-2, -1), keepdim=True) + eps)  # spectral norm <= Frobenius norm <= 1
    for _ in range(steps):
        gram = x @ x.mT
        poly = b * gram + c * (gram @ gram)
        x = a * x + poly @ x
    if transposed:
        x = x.mT
    return x.to(g.dtype)


def _orthogonalised(update: torch.Tensor, steps: int) -> torch.Tensor:
    """Newton-Schulz on a plain tensor, or on the gathered matrix of a sharded DTensor."""
    from torch.distributed.tensor import DTensor, distribute_tensor

    if isinstance(update, DTensor):
        full = newton_schulz(update.full_tensor(), steps)
        return distribute_tensor(full, update.device_mesh, update.placements, src_data_rank=None)
    return newton_schulz(update, steps)


class Muon(Optimizer):
    """Muon for groups with `use_muon=True`, AdamW for the others; decoupled weight decay in both."""

    def __init__(
        self,
        params: Iterable[Any],
        lr: float = 1e-3,
        weight_decay: float = 0.0,
        momentum: float = 0.95,
        nesterov: bool = True,
        ns_steps: int = 5,
        rms_scale: float = 0.2,
        betas: tuple[float, float] = (0.9, 0.95),
        eps: float = 1e-8,
        use_muon: bool = False,
    ) -> None:
        defaults = dict(
            lr=lr,
            weight_decay=weight_decay,
            momentum=momentum,
            nesterov=nesterov,
            ns_steps=ns_steps,
            rms_scale=rms_scale,
            betas=tuple(betas),
            eps=eps,
            use_muon=use_muon,
        )
        super().__init__(params, defaults)

    @torch.no_grad()
    def step(self, closure: Any = None) -> Any:  # type: ignore[override]
        """One update of every parameter that has a gradient."""
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                if group["use_muon"]:
                    self._muon_step(p, group)
                else:
                    self._adamw_step(p, group)
        return loss

    def _muon_step(self, p: torch.Tensor, group: dict[str, Any]) -> None:
        state = self.state[p]
        if "momentum_buffer" not in state:
            state["momentum_buffer"] = torch.zeros_like(p)
        buf = state["momentum_buffer"]
        buf.lerp_(p.grad, 1.0 - group["momentum"])
        update = p.grad.lerp(buf, group["momentum"]) if group["nesterov"] else buf
        ortho = _orthogonalised(update, group["ns_steps"])
        scale = group["rms_scale"] * math.sqrt(max(p.shape[-2], p.shape[-1]))
        p.mul_(1.0 - group["lr"] * group["weight_decay"])
        p.add_(ortho, alpha=-group["lr"] * scale)

    def _adamw_step(self, p: torch.Tensor, group: dict[str, Any]) -> None:
        state = self.state[p]
        if "step" not in state:
            state["step"] = torch.zeros((), dtype=torch.float32)
            state["exp_avg"] = torch.zeros_like(p)
            state["exp_avg_sq"] = torch.zeros_like(p)
        beta1, beta2 = group["betas"]
        state["step"] += 1
        step = float(state["step"])
        state["exp_avg"].lerp_(p.grad, 1.0 - beta1)
        state["exp_avg_sq"].mul_(beta2).addcmul_(p.grad, p.grad, value=1.0 - beta2)
        denom = (state["exp_avg_sq"] / (1.0 - beta2**step)).sqrt_().add_(group["eps"])
        p.mul_(1.0 - group["lr"] * group["weight_decay"])
        p.addcdiv_(state["exp_avg"], denom, value=-group["lr"] / (1.0 - beta1**step))
