"""Aux-loss-free expert balancing: move each router's biases toward uniform expert load.

Per layer, from the counts of the last optimizer step (summed over micro-batches and, when distributed,
all-reduced over the data-parallel group so every rank applies the same step):

    p_e   = count_e / sum_{e' < E} count_e'         load share of expert e among routed (non-skip) pairs
    err_e = p_e - 1 / E                             positive: over-loaded
    m     = b1 m + (1 - b1) err,  v = b2 v + (1 - b2) err^2        (bias-corrected, as Adam)
    b_e  -= rate * m_hat / (sqrt(v_hat) + 1e-8),    then b_{0..E-1} re-centred to mean 0

The normalised step moves every bias by about `rate` per step however small the error, like the sign
update of DeepSeek-V3's aux-loss-free balancing, but smooths it over steps. The skip class keeps its
bias (`skip_bias_init`): how often tokens skip is learned by the router, not forced toward 1/E.
"""

from __future__ import annotations

import torch

from zaya_model.config import ZayaConfig
from zaya_model.router import ZayaRouter


def load_fractions(counts_LC: torch.Tensor) -> torch.Tensor:
    """Counts [L, E + 1] -> fractions per layer (rows of zeros stay zero)."""
    totals = counts_LC.sum(dim=-1, keepdim=True)
    return torch.where(totals > 0, counts_LC / totals.clamp_min(1), torch.zeros_like(counts_LC))


def all_reduce_counts(counts_LC: torch.Tensor, process_group: object | None = None) -> torch.Tensor:
    """Sum the counts over the process group when torch.distributed is initialised (else unchanged)."""
    import torch.distributed as dist

    if process_group is None and not (dist.is_available() and dist.is_initialized()):
        return counts_LC
    summed = counts_LC.clone()
    dist.all_reduce(summed, op=dist.ReduceOp.SUM, group=process_group)
    return summed


@torch.no_grad()
def bias_step(router: ZayaRouter, counts_C: torch.Tensor, config: ZayaConfig) -> None:
    """Apply one balancing step to `router`'s biases from its (global) counts [E + 1].

    A step with no routed pair changes nothing. Written without host synchronisation (no Python branch on
    a device value), so the trainer's step never waits for the GPU here."""
    E = router.num_experts
    expert_counts = counts_C[:E].to(torch.float32)
    total = expert_counts.sum()
    routed = total > 0
    err = expert_counts / total.clamp_min(1) - 1.0 / E
    b1, b2 = config.bias_update_beta1, config.bias_update_beta2
    router.bias_steps += routed.to(router.bias_steps.dtype)
    t = router.bias_steps.clamp_min(1)
    first = torch.where(routed, router.bias_first_moment * b1 + err * (1 - b1), router.bias_first_moment)
    second = torch.where(routed, router.bias_second_moment * b2 + err * err * (1 - b2), router.bias_second_moment)
    router.bias_first_moment.copy_(first)
    router.bias_second_moment.copy_(second)
    m_hat = first / (1 - b1**t)
    v_hat = second / (1 - b2**t)
    biases = router.balancing_biases[:E] - config.bias_update_rate * m_hat / (v_hat.sqrt() + 1e-8)
    router.balancing_biases[:E] = torch.where(routed, biases - biases.mean(), router.balancing_biases[:E])
