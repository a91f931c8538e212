"""Bytes a context-parallel training step moves between the ranks of a CP group, computed from the model config.

Per sequence of `seq_len` tokens split over N ranks (context_parallel.py), per rank, forward + backward; the
collectives are counted as ring algorithms count them (all-gather and reduce-scatter: each rank sends and
receives (N-1)/N of the full tensor):
- `all_gather` (what zaya-model does): per CCA layer the keys and values (2·K·d values per token) are
  all-gathered forward and their gradients reduce-scattered backward; the halo (each chunk's last P q|k inputs
  and last delayed value) is all-gathered forward and reduce-scattered backward; the loss all-reduces two
  fp32 numbers. With activation checkpointing the forward gathers run again in the recomputation.
- `ring` (ring attention, for comparison): each rank's K/V blocks travel N-1 hops forward; backward the K/V
  blocks travel again while the dK/dV blocks travel with them (N-1 hops each); the halo and the loss as above.
  Forward the two schemes move the same K/V bytes; backward ring attention moves twice as many.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from zaya_model.config import ZayaConfig
from zaya_model.context_parallel import padded_length

SCHEMES = ("all_gather", "ring")


@dataclass(frozen=True)
class CPTraffic:
    """Bytes one rank sends (= receives) per sequence, by what they carry; `total` sums them."""

    scheme: str
    cp_size: int
    seq_len: int  # padded to whole chunks
    layers: int
    kv_forward: int  # K/V all-gather (or ring passes) in forward, recomputation included
    kv_backward: int  # dK/dV reduce-scatter (all_gather) or K/V + dK/dV ring passes (ring)
    halo: int  # conv/delayed-value halos, forward (and recomputation) and backward
    loss: int  # the group's token count and loss sum

    @property
    def total(self) -> int:
        return self.kv_forward + self.kv_backward + self.halo + self.loss

    def to_dict(self) -> dict:
        return {**asdict(self), "total": self.total}


def context_parallel_traffic(
    cfg: ZayaConfig,
    seq_len: int,
    cp_size: int,
    scheme: str = "all_gather",
    dtype_bytes: int = 2,
    recompute: bool = False,
) -> CPTraffic:
    """Bytes per rank per sequence of a CP group of `cp_size` (see the module doc); `recompute`: activation
    checkpointing (the forward's collectives run twice); dtype_bytes: the activations' (2 for bf16)."""
    if scheme not in SCHEMES:
        raise ValueError(f"scheme {scheme!r}; allowed: {SCHEMES}")
    N, L = cp_size, cfg.num_hidden_layers
    S = padded_length(seq_len, N) if N > 1 else seq_len
    share = (N - 1) / N  # of a gathered tensor, each rank sends and receives this much (ring algorithm)
    kv = round(share * S * 2 * cfg.kv_size * dtype_bytes)  # one layer's K and V of the whole sequence
    halo_values = 2 * N * (cfg.conv_state_len * cfg.conv_channels + cfg.kv_size // 2)  # every chunk's tails
    halo = round(share * halo_values * dtype_bytes)
    forwards = 2 if recompute else 1
    kv_backward = kv if scheme == "all_gather" else 2 * kv
    return CPTraffic(
        scheme=scheme,
        cp_size=N,
        seq_len=S,
        layers=L,
        kv_forward=L * forwards * kv,
        kv_backward=L * kv_backward,
        halo=L * (forwards + 1) * halo,
        loss=round(2 * share * 2 * 4),  # all-reduce (reduce-scatter + all-gather) of two fp32 numbers
    )
