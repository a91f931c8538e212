"""Aux-loss-free balancing of the ZAYA router: steer every class, skip included, toward a target load.

The router scores C = E + 1 classes (E experts, class E = the skip route that computes nothing) and picks
top-k of probability + bias. Per layer, from the counts of the last optimizer step (summed over
micro-batches and, when distributed, all-reduced over the data-parallel group so every rank applies the
same step):

    p_c   = count_c / sum_c' count_c'                  load share of class c among all (token, slot) pairs
    t_c   = (1 - s) / E for an expert, s for skip      s = `ZayaConfig.skip_target` (`skip_rate_target`)
    err_c = p_c - t_c                                  positive: over-loaded
    m     = b1 m + (1 - b1) err,  v = b2 v + (1 - b2) err^2        (bias-corrected, as Adam)
    d_c   = rate * m_hat_c / (sqrt(v_hat_c) + 1e-8);   b_c -= d_c - mean(d)

Why every class: AMD's Megatron port of ZAYA1 (AMD-AGI/Primus,
`primus/backends/megatron/core/models/zaya1/zaya1_modules.py`, `ZayaRouter._update_biases`) runs this
Adam-normalised step on all E + 1 biases toward the uniform load 1 / (E + 1) (rate 1e-3, betas 0.9 /
0.999, skip bias starting at -1). Balancing the experts alone, with the skip bias fixed at -1, makes the
skip route unreachable under top-1 (some expert's bias is >= 0 while p_skip - 1 < 0), so the skip rate
stays 0. Our null `skip_rate_target` is Primus's uniform target; a number sets the skip share and splits
the rest evenly over the experts.

The normalised step moves every bias by about `rate` per step however small its error (a smoothed sign
update, like DeepSeek-V3's aux-loss-free balancing), so a router that never skips reaches its target
after roughly (initial gap) / rate steps. The step is made zero-sum (`- mean(d)`): top-k only compares
biases, so a common shift changes nothing, and without it the biases would drift together.
"""

from __future__ import annotations

import torch

from zaya_model.config import ZayaConfig
from zaya_model.router import ZayaRouter


def load_fractions(counts_LC: torch.Tensor) -> torch.Tensor:
    """Counts [L, E + 1] -> fractions per layer (rows of zeros stay zero)."""
    totals = counts_LC.sum(dim=-1, keepdim=True)
    return torch.where(totals > 0, counts_LC / totals.clamp_min(1), torch.zeros_like(counts_LC))


def target_load(config: ZayaConfig, device: torch.device | str | None = None) -> torch.Tensor:
    """The load [E + 1] the balancing steers to: (1 - s) / E per expert, s on the skip class.

    Filled on `device` (kernels only: a host tensor copied over would synchronise with the GPU)."""
    E, s = config.num_experts, config.skip_target
    target = torch.full((E + 1,), (1.0 - s) / E, dtype=torch.float32, device=device)
    target[E] = s
    return target


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

    A step with no counted pair changes nothing. Written without host synchronisation (no Python branch
    on a device value), so the trainer's step never waits for the GPU here."""
    counts = counts_C.to(torch.float32)
    total = counts.sum()
    counted = total > 0
    target = target_load(config, counts.device)
    err = counts / total.clamp_min(1) - target
    b1, b2 = config.bias_update_beta1, config.bias_update_beta2
    router.bias_steps += counted.to(router.bias_steps.dtype)
    t = router.bias_steps.clamp_min(1)
    first = torch.where(counted, router.bias_first_moment * b1 + err * (1 - b1), router.bias_first_moment)
    second = torch.where(counted, router.bias_second_moment * b2 + err * err * (1 - b2), router.bias_second_moment)
    router.bias_first_moment.copy_(first)
    router.bias_second_moment.copy_(second)
    step = config.bias_update_rate * (first / (1 - b1**t)) / ((second / (1 - b2**t)).sqrt() + 1e-8)
    step = torch.where(counted, step - step.mean(), torch.zeros_like(step))
    router.balancing_biases.sub_(step)
