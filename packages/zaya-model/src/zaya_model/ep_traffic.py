"""Bytes an expert-parallel training step moves between the ranks of an EP group, computed from the model config.

Per rank and per micro-batch of `tokens` tokens, forward + backward (expert_parallel.py): in every MoE layer each
routed (token, slot) pair whose expert lives on another rank goes there and its output comes back (dispatch and
combine, `all_to_all_single` of D activations per pair), and backward sends the gradients of both back the
other way; the skip route never leaves the rank. A rank sends its own remote pairs in dispatch and the
combine's backward, and the pairs it computed for others in the combine and the dispatch's backward, so with
as many pairs arriving as leaving (what balanced routing gives) that is 4 x remote pairs x D x dtype bytes per
layer. Before the dispatch the per-expert counts are exchanged (E int64s, (ep-1)/ep of them to other ranks).
With activation checkpointing the forward's all-to-alls run again in the recomputation.

Which pairs are remote depends on the routing: `routed_share` (pairs not skipped) defaults to the balancing
target 1 - skip_rate_target, `remote_share` (of the routed pairs, those whose expert is on another rank) to
(ep-1)/ep, an even spread over the experts; a measured run passes its own (zaya-train's tests check the bytes
the collectives carry in a gloo run against this with the routers' counts).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from zaya_model.config import ZayaConfig


@dataclass(frozen=True)
class EPTraffic:
    """Bytes one rank sends (= receives, on average) per micro-batch, by what they carry; `total` sums them."""

    ep_size: int
    tokens: int  # per rank per micro-batch
    layers: int
    remote_pairs: float  # per layer: routed pairs whose expert is on another rank
    dispatch_forward: int  # activations to the experts' ranks (and again in the recomputation)
    combine_forward: int  # expert outputs back
    backward: int  # the gradients of both, the other way
    counts: int  # the per-expert pair counts before each dispatch

    @property
    def total(self) -> int:
        return self.dispatch_forward + self.combine_forward + self.backward + self.counts

    def to_dict(self) -> dict:
        return {**asdict(self), "total": self.total}


def expert_parallel_traffic(
    cfg: ZayaConfig,
    tokens: int,
    ep_size: int,
    dtype_bytes: int = 2,
    recompute: bool = False,
    routed_share: float | None = None,
    remote_share: float | None = None,
) -> EPTraffic:
    """Bytes per rank per micro-batch of `tokens` tokens under EP over `ep_size` ranks (module docstring);
    dtype_bytes: the activations' (2 for bf16 autocast, 4 in fp32); `recompute`: activation checkpointing."""
    N, L, D = ep_size, cfg.num_hidden_layers, cfg.hidden_size
    routed = (1.0 - cfg.skip_target) if routed_share is None else routed_share
    remote = ((N - 1) / N) if remote_share is None else remote_share
    pairs = tokens * cfg.num_experts_per_tok * routed * remote
    one_way = round(L * pairs * D * dtype_bytes)
    forwards = 2 if recompute else 1
    counts = round(L * forwards * cfg.num_experts * 8 * (N - 1) / N)
    return EPTraffic(
        ep_size=N,
        tokens=tokens,
        layers=L,
        remote_pairs=pairs,
        dispatch_forward=forwards * one_way,
        combine_forward=forwards * one_way,
        backward=2 * one_way,
        counts=counts,
    )
