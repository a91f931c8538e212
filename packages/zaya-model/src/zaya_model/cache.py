"""Decode state of ZAYA1: per layer a KV cache plus the CCA conv state and the delayed-value state.

CCA makes attention partly recurrent: each step needs the last `conv_state_len` q|k projections (inputs of
the causal convs) and the previous token's delayed value projection, besides the usual keys and values.
Buffers are preallocated to `max_len` so decode steps write in place (no re-allocation per token).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from zaya_model.config import ZayaConfig
from zaya_model.errors import ZayaModelError


@dataclass
class ZayaLayerCache:
    """One layer's state: keys/values [B, K, max_len, d], conv inputs [B, P, C], delayed value [B, K*d/2]."""

    keys: torch.Tensor
    values: torch.Tensor
    conv_state: torch.Tensor | None = None
    delayed_value: torch.Tensor | None = None


def check_cache_size(config: ZayaConfig, batch_size: int, max_len: int) -> None:
    """A cache must hold at least one row and position, and no more positions than RoPE was set up for."""
    if batch_size <= 0 or max_len <= 0:
        raise ZayaModelError(f"a cache needs batch_size and max_len > 0, got {batch_size} and {max_len}")
    if max_len > config.max_position_embeddings:
        raise ZayaModelError(
            f"cache max_len {max_len} exceeds max_position_embeddings {config.max_position_embeddings}; "
            "shorten the request or raise model.max_positions"
        )


class ZayaCache:
    """All layers' decode state and the number of positions already processed (`length`)."""

    def __init__(
        self,
        config: ZayaConfig,
        batch_size: int,
        max_len: int,
        device: torch.device | str | None = None,
        dtype: torch.dtype = torch.float32,
    ) -> None:
        check_cache_size(config, batch_size, max_len)
        shape = (batch_size, config.num_key_value_heads, max_len, config.head_dim)
        self.layers = [
            ZayaLayerCache(
                torch.zeros(shape, device=device, dtype=dtype), torch.zeros(shape, device=device, dtype=dtype)
            )
            for _ in range(config.num_hidden_layers)
        ]
        self.batch_size = batch_size
        self.max_len = max_len
        self.length = 0

    @classmethod
    def from_buffers(cls, keys: list[torch.Tensor], values: list[torch.Tensor]) -> ZayaCache:
        """An empty cache that writes into given per-layer K/V buffers [B, K, max_len, d] (no allocation):
        a `ZayaStaticCache`'s prompt pass runs the ordinary forward through it."""
        cache = cls.__new__(cls)
        cache.layers = [ZayaLayerCache(k, v) for k, v in zip(keys, values, strict=True)]
        cache.batch_size, cache.max_len, cache.length = keys[0].shape[0], keys[0].shape[2], 0
        return cache

    def check_room(self, new_tokens: int, batch_size: int) -> None:
        """Fail clearly before a step that would not fit."""
        if batch_size != self.batch_size:
            raise ZayaModelError(f"cache was made for batch size {self.batch_size}, got a batch of {batch_size}")
        if self.length + new_tokens > self.max_len:
            raise ZayaModelError(
                f"cache holds {self.length} of {self.max_len} positions; {new_tokens} more do not fit "
                "(make the cache with a larger max_len)"
            )

    def append_kv(
        self, layer: int, keys_BKTd: torch.Tensor, values_BKTd: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Write this step's keys/values at [length, length + T) and return the filled prefix."""
        state = self.layers[layer]
        end = self.length + keys_BKTd.shape[2]
        state.keys[:, :, self.length : end] = keys_BKTd.to(state.keys.dtype)
        state.values[:, :, self.length : end] = values_BKTd.to(state.values.dtype)
        return state.keys[:, :, :end], state.values[:, :, :end]

    def advance(self, new_tokens: int) -> None:
        """Called once per forward, after every layer has appended."""
        self.length += new_tokens
