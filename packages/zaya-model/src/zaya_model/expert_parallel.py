"""Expert parallelism (EP) for the ZAYA MoE: the E experts split over a group of `size` ranks, E / size each.

Rank r of an EP group holds the global experts [r·E/size, (r+1)·E/size) (a slice on dim 0 of the stacked
`gate_up` / `down`, the layout ckpt-reshape reads, `parallel.py`). Every rank routes its own tokens, then
(`dispatch_and_combine`, dropless: no capacity factor, every routed pair is computed):

1. the (token, slot) pairs are sorted by class id; the skip class (id E) sorts last and never leaves the rank
   (a skipped pair outputs zero, as without EP);
2. the per-expert pair counts are exchanged (one `all_to_all_single` of E int64s) and read to the host once:
   the split sizes of the all-to-alls and the grouping of what arrives;
3. dispatch: `all_to_all_single` with per-rank splits sends each routed pair's activation to the rank of its
   expert; what arrives (source-rank major) is regrouped expert-major and runs through the local experts
   (the grouped GEMM or the loop, as without EP);
4. combine: the outputs are put back in arrival order and a second `all_to_all_single` returns them; each
   rank weights them by the router probabilities and sums the k slots in token order.

Backward runs the two all-to-alls in reverse (`_AllToAll.backward`): the gradient of each expert's weights on
its rank sums over every token of the EP group that chose it. What the trainer does with that (the expert
gradients reduced over the ranks that hold the same experts, Muon's iteration where they live, checkpoints)
is zaya-train's (`zaya_train/distributed/expert_parallel.py`). The bytes moved: `ep_traffic.py`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
import torch.distributed as dist

from zaya_model.errors import ZayaModelError


@dataclass(frozen=True)
class ExpertParallel:
    """This rank's place in an EP group: the process group (None: the default group), its size and rank."""

    group: Any
    size: int
    rank: int

    def local_experts(self, num_experts: int) -> range:
        """The global ids of the experts this rank holds."""
        check_expert_parallel(num_experts, self.size)
        per_rank = num_experts // self.size
        return range(self.rank * per_rank, (self.rank + 1) * per_rank)


def check_expert_parallel(num_experts: int, size: int, key: str = "expert_parallel") -> None:
    """Every EP rank holds the same number of whole experts."""
    if size < 1 or num_experts % size:
        raise ZayaModelError(
            f"{key} = {size} does not divide num_experts = {num_experts}; use a divisor of it "
            "(each rank holds num_experts / expert_parallel whole experts)"
        )


class _AllToAll(torch.autograd.Function):
    """`all_to_all_single` of rows with per-rank splits; backward sends the gradients back the same way."""

    @staticmethod
    def forward(ctx, x: torch.Tensor, out_splits: list[int], in_splits: list[int], group: Any) -> torch.Tensor:  # type: ignore[override]
        ctx.splits, ctx.group = (out_splits, in_splits), group
        out = x.new_empty((sum(out_splits), *x.shape[1:]))
        dist.all_to_all_single(out, x.contiguous(), out_splits, in_splits, group=group)
        return out

    @staticmethod
    def backward(ctx, grad: torch.Tensor):  # type: ignore[override]
        out_splits, in_splits = ctx.splits
        back = grad.new_empty((sum(in_splits), *grad.shape[1:]))
        dist.all_to_all_single(back, grad.contiguous(), in_splits, out_splits, group=ctx.group)
        return back, None, None, None


def exchange_counts(routed_E: torch.Tensor, ep: ExpertParallel) -> tuple[list[int], list[int], list[int]]:
    """(rows to send to each rank, rows to receive from each rank, the received pairs per (source rank, local
    expert) flattened) from this rank's pairs per global expert [E] (int64). One all-to-all of the counts and
    one host read (the split sizes must be on the host)."""
    received = torch.empty_like(routed_E)
    dist.all_to_all_single(received, routed_E.contiguous(), group=ep.group)  # E / size counts from each rank
    per_rank = routed_E.shape[0] // ep.size
    host = torch.cat((routed_E.view(ep.size, per_rank).sum(1), received)).tolist()
    send, by_source = host[: ep.size], host[ep.size :]
    recv = [sum(by_source[s * per_rank : (s + 1) * per_rank]) for s in range(ep.size)]
    return send, recv, by_source


def _expert_major(by_source: list[int], size: int, per_rank: int, device: torch.device) -> torch.Tensor:
    """The order that turns received rows (source-major: source s, then its local experts) expert-major."""
    counts = torch.tensor(by_source, dtype=torch.int64, device=device)
    total = sum(by_source)
    segment = torch.repeat_interleave(torch.arange(size * per_rank, device=device), counts, output_size=total)
    source, expert = segment // per_rank, segment % per_rank
    return torch.argsort(expert * size + source, stable=True)


def dispatch_and_combine(
    x_ND: torch.Tensor,
    order_N: torch.Tensor,
    counts_C: torch.Tensor,
    ep: ExpertParallel,
    compute: Any,
) -> torch.Tensor:
    """The expert outputs [R, D] of this rank's routed pairs, in sorted order (see the module docstring).

    x_ND: every pair's input in sorted order (skipped pairs last); order_N: the sort; counts_C: pairs per class
    [E + 1]; compute(x_MD, counts_per_local_expert) runs the local experts on rows grouped by expert."""
    E = counts_C.shape[0] - 1
    per_rank = E // ep.size
    send, recv, by_source = exchange_counts(counts_C[:E], ep)
    routed = sum(send)
    arrived = _AllToAll.apply(x_ND[:routed], recv, send, ep.group)
    order = _expert_major(by_source, ep.size, per_rank, x_ND.device)
    local_counts = [sum(by_source[s * per_rank + e] for s in range(ep.size)) for e in range(per_rank)]
    y_local = compute(arrived[order], local_counts)
    y_arrived = torch.empty_like(y_local).index_copy_(0, order, y_local)
    return _AllToAll.apply(y_arrived, send, recv, ep.group)


def set_model_expert_parallel(model: Any, ep: ExpertParallel | None) -> None:
    """Every MoE layer of `model` dispatches over `ep` (None: off). The expert weights must already be this
    rank's slice (zaya-train's parallelize makes them so); checked here against the slice's size."""
    for layer in model.layers:
        experts = layer.moe.experts
        if ep is not None:
            check_expert_parallel(experts.num_experts, ep.size)
            local = experts.local_weights()[0].shape[0]
            if local != experts.num_experts // ep.size:
                raise ZayaModelError(
                    f"expert parallel {ep.size}: the experts hold {local} of {experts.num_experts} experts, not "
                    f"{experts.num_experts // ep.size}; slice them first (zaya_train.distributed.expert_parallel)"
                )
        experts.expert_parallel = ep
        if ep is not None and "_expert_parallel" not in vars(experts):
            # split sizes read on the host, collectives: a compiled block runs the dispatch eagerly between its
            # graphs (torch._dynamo is imported here, by EP runs only, not by `import zaya_model`)
            experts._expert_parallel = torch.compiler.disable(experts._expert_parallel)
    model.expert_parallel = ep
