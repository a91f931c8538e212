"""The ZAYA router: a small MLP on a depth-averaged low-rank state, over num_experts + 1 classes.

- down-projection D -> R; exponential depth averaging (EDA): r_l = down(x) + gamma_l * r_{l-1}, where
  r_{l-1} is the previous layer's router state and gamma_l a learned per-channel scale (layer 0 has none);
  r_l is passed on to the next layer;
- RMSNorm, two GELU layers of width R, logits over E + 1 classes (class E is the skip route: no compute);
- softmax; top-k on the probabilities plus detached balancing biases (aux-loss-free balancing, the biases
  steer selection only, see balancing.py); the chosen experts are weighted by their unbiased probability.

What a skipped token outputs: nothing (its MoE branch is zero; the block's residual scaling still
applies). This is what Hugging Face transformers (`models/zaya/modeling_zaya.py`, `ZayaRouter.forward`
masks the skip class's weight to 0) and vLLM (`vllm/model_executor/models/zaya.py`, same masking before
`FusedMoE`) do with the released checkpoints, and it keeps our logits equal to theirs. The Megatron-era
code paths differ: Zyphra's earlier transformers fork (`zaya_use_mod`, `ZayaBlock.forward`) and AMD's
Primus port (`ZayaMoE.forward`) pass a skipped token's input through, scaled by its skip probability.

In training mode the router also returns how many (token, slot) pairs each class got ([E + 1], fp32; padding
excluded); `ZayaForCausalLM` adds them to `load_counts` (float64) outside the block, so a block that is
compiled or recomputed under activation checkpointing counts each micro-batch exactly once.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from zaya_model.config import ZayaConfig
from zaya_model.layers import ZayaRMSNorm


class ZayaRouter(nn.Module):
    """Chooses top-k of E experts + skip per token; keeps the balancing biases and the load counts."""

    def __init__(self, config: ZayaConfig, layer_idx: int) -> None:
        super().__init__()
        R, classes = config.router_hidden_size, config.num_experts + 1
        self.num_experts = config.num_experts
        self.top_k = config.num_experts_per_tok
        self.down = nn.Linear(config.hidden_size, R, bias=True)
        self.depth_scale = nn.Parameter(torch.ones(R)) if layer_idx > 0 else None
        self.norm = ZayaRMSNorm(R, config.rms_norm_eps)
        self.fc1 = nn.Linear(R, R, bias=True)
        self.fc2 = nn.Linear(R, R, bias=True)
        self.out = nn.Linear(R, classes, bias=False)
        biases = torch.zeros(classes, dtype=torch.float32)
        biases[-1] = config.skip_bias_init
        self.register_buffer("balancing_biases", biases)
        # The bias-balancing step's moment estimates (persistent: a resumed run continues the same step).
        self.register_buffer("bias_first_moment", torch.zeros(classes, dtype=torch.float32))
        self.register_buffer("bias_second_moment", torch.zeros(classes, dtype=torch.float32))
        self.register_buffer("bias_steps", torch.zeros((), dtype=torch.float32))
        self.register_buffer("load_counts", torch.zeros(classes, dtype=torch.float64), persistent=False)

    def _apply(self, fn, recurse=True):  # type: ignore[no-untyped-def]
        """`model.to(bf16)` moves these buffers but keeps their precision (biases fp32, counts fp64)."""
        kept = {name: buf for name, buf in self._buffers.items() if buf is not None}
        super()._apply(fn, recurse)
        for name, old in kept.items():
            self._buffers[name] = old.to(device=self._buffers[name].device)
        return self

    def forward(
        self, x_BTD: torch.Tensor, prev_state_BTR: torch.Tensor | None, token_mask_BT: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor | None]:
        """(class ids [B*T, k] in [0, E], with E = skip; weights [B*T, k]; router state [B, T, R];
        per-class counts [E + 1] in training mode, else None)."""
        state = self.down(x_BTD)
        if self.depth_scale is not None and prev_state_BTR is not None:
            state = state + prev_state_BTR * self.depth_scale
        h = F.gelu(self.fc1(self.norm(state)))
        h = F.gelu(self.fc2(h))
        probs = torch.softmax(self.out(h), dim=-1, dtype=torch.float32)
        probs_NC = probs.reshape(-1, probs.shape[-1])
        scores = probs_NC.detach() + self.balancing_biases
        # top-1 (ZAYA1's setting) by argmax, a reduction inductor generates itself; topk is a library kernel of
        # its own (gatherTopK: 5 us of every layer's batch-1 decode step on an H200, BENCHMARKS.md)
        if self.top_k == 1:
            choice = scores.argmax(dim=-1, keepdim=True)
        else:
            choice = torch.topk(scores, self.top_k, dim=-1).indices
        weights = torch.gather(probs_NC, 1, choice)
        weights = weights.masked_fill(choice == self.num_experts, 0.0)
        counts = self._count(choice, token_mask_BT) if self.training else None
        return choice, weights, state, counts

    def _count(self, choice_Nk: torch.Tensor, token_mask_BT: torch.Tensor | None) -> torch.Tensor:
        ones = torch.ones(choice_Nk.shape, dtype=torch.float32, device=choice_Nk.device)
        if token_mask_BT is not None:
            ones = ones * token_mask_BT.reshape(-1, 1).to(torch.float32)
        zeros = torch.zeros(self.num_experts + 1, dtype=torch.float32, device=choice_Nk.device)
        return zeros.index_add(0, choice_Nk.reshape(-1), ones.reshape(-1))
