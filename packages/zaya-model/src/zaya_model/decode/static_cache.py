"""`ZayaStaticCache`: the decode state of every layer in fixed-size buffers, its counters on the device.

Per layer: keys and values [B, K, max_len, d], the CCA conv inputs [B, P, C] and the delayed value
[B, K*d/2] (see `zaya_model/cache.py`, the forward's dynamic cache, for why CCA needs the last two). Shared by the layers: which slots hold real
tokens (`valid` [B, max_len]: left padding stays invalid), each row's next RoPE position (`positions` [B])
and the next slot (`length` [1], the same for every row). Nothing about the step lives on the host, so one
decode step has the same shapes and addresses at every position: it can be compiled once and replayed
from a CUDA graph.
"""

from __future__ import annotations

import torch

from zaya_model.cache import ZayaCache, check_cache_size
from zaya_model.config import ZayaConfig


class ZayaStaticCache:
    """Preallocated decode state for `batch_size` rows of up to `max_len` positions."""

    def __init__(
        self,
        config: ZayaConfig,
        batch_size: int,
        max_len: int,
        device: torch.device | str | None = None,
        dtype: torch.dtype = torch.float32,
    ) -> None:
        check_cache_size(config, batch_size, max_len)
        B, K, S, d = batch_size, config.num_key_value_heads, max_len, config.head_dim

        def zeros(*shape: int, dtype: torch.dtype = dtype) -> torch.Tensor:
            return torch.zeros(shape, device=device, dtype=dtype)

        L = config.num_hidden_layers
        self.keys = [zeros(B, K, S, d) for _ in range(L)]
        self.values = [zeros(B, K, S, d) for _ in range(L)]
        self.conv_state = [zeros(B, config.conv_state_len, config.conv_channels) for _ in range(L)]
        self.delayed_value = [zeros(B, config.kv_size // 2) for _ in range(L)]
        self.valid = zeros(B, S, dtype=torch.bool)
        self.positions = zeros(B, dtype=torch.long)
        self.length = zeros(1, dtype=torch.long)
        self.batch_size, self.max_len = batch_size, max_len

    def layer(self, i: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """(keys, values, conv state, delayed value) of layer i."""
        return self.keys[i], self.values[i], self.conv_state[i], self.delayed_value[i]

    def reset(self) -> None:
        """Forget every sequence (stale keys need no clearing: their slots are invalid)."""
        self.valid.zero_()
        self.positions.zero_()
        self.length.zero_()
        for state in (*self.conv_state, *self.delayed_value):
            state.zero_()

    def prompt_view(self) -> ZayaCache:
        """A dynamic `ZayaCache` writing into these K/V buffers, for the prompt's ordinary forward."""
        return ZayaCache.from_buffers(self.keys, self.values)

    def finish_prompt(self, view: ZayaCache, mask_BT: torch.Tensor, next_positions_B: torch.Tensor) -> None:
        """Take over the prompt pass's state: conv and delayed values, valid slots, positions, length."""
        T = mask_BT.shape[1]
        for i, state in enumerate(view.layers):
            self.conv_state[i].copy_(state.conv_state)
            self.delayed_value[i].copy_(state.delayed_value)
        self.valid[:, :T].copy_(mask_BT.to(torch.bool))
        self.positions.copy_(next_positions_B)
        self.length.fill_(T)

    def advance(self) -> None:
        """After every layer has written: the slot becomes valid, positions and length move on by one."""
        self.valid.index_fill_(1, self.length, True)
        self.positions.add_(1)
        self.length.add_(1)
