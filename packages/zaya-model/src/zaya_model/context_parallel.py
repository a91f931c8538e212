"""Context parallelism (CP) for CCA: one sequence split over a group of N ranks.

Layout (zigzag, load-balanced for causal attention): the sequence, padded at its end to a multiple of 2N,
is cut into 2N chunks of L tokens; rank r holds chunks r and 2N-1-r, concatenated ([B, 2L] per rank). An
early chunk attends few keys and a late one many, so every rank attends (2N+1)·L keys per query chunk pair.
Padding at the end is exact: everything in ZAYA1 is causal, so no real token sees a padded one; padded
positions get label `ignore_index` and are left out of the router's load counts.

What crosses ranks, per CCA layer (everything else, the router and the experts included, is per token):
- the halo: a chunk's causal convs need the q|k projections of the `conv_state_len` tokens before it and its
  delayed value the previous token's delayed projection; each rank all-gathers the tails of every chunk
  (2N·(P·C + K·d/2) values: 86 KB per layer for zaya1-base at N = 8) and takes its predecessors'
  (`exchange_halo`);
- the keys and values: CCA's compressed K/V (K·d channels each, 256 + 256 for zaya1-base against D = 2048)
  are all-gathered after RoPE (`gather_sequence`); the backward reduce-scatters their gradients. Ring
  attention would move the same K/V bytes forward and both K/V and dK/dV again backward (3 volumes against
  2): `communication_volume` computes both (BENCHMARKS.md of zaya-model).
RoPE uses the tokens' global positions (`ContextParallel.positions`). The mean loss over the group is the
sum of every rank's token losses over the group's token count (`group_mean_loss`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import torch
import torch.distributed as dist
import torch.nn.functional as F

from zaya_model.errors import ZayaModelError

IGNORE_INDEX = -100


@dataclass(frozen=True)
class ContextParallel:
    """This rank's place in a CP group: the process group (None: the default group), its size and rank."""

    group: Any
    size: int
    rank: int

    @classmethod
    def of_group(cls, group: Any = None) -> ContextParallel:
        """The CP context of this process in `group` (None: the default, whole-world group)."""
        return cls(group, dist.get_world_size(group), dist.get_rank(group))

    def chunks(self) -> tuple[int, int]:
        """Global indices of this rank's two chunks, in local order."""
        return self.rank, 2 * self.size - 1 - self.rank

    def chunk_len(self, local_len: int) -> int:
        """L, from this rank's local length 2L (refuses what `shard_sequence` cannot have made)."""
        if local_len % 2:
            raise ZayaModelError(
                f"under context parallelism a rank's input holds its two zigzag chunks (even length), got {local_len}"
                " tokens; shard the sequence with zaya_model.context_parallel.shard_sequence"
            )
        return local_len // 2

    def positions(self, local_len: int, device: torch.device | str | None = None) -> torch.Tensor:
        """Global positions [2L] of this rank's tokens (RoPE sees where a token is in the whole sequence)."""
        L = self.chunk_len(local_len)
        return torch.cat([torch.arange(c * L, (c + 1) * L, device=device) for c in self.chunks()])


@contextlib.contextmanager
def context_parallel_off(model: Any) -> Iterator[None]:
    """Run whole sequences on this rank for a while (evaluations that feed unsplit inputs), then restore."""
    cp = getattr(model, "context_parallel", None)
    if cp is None:
        yield
        return
    model.set_context_parallel(None)
    try:
        yield
    finally:
        model.set_context_parallel(cp)


def padded_length(seq_len: int, cp_size: int) -> int:
    """The sequence length rounded up to a multiple of 2N (the padding goes at the end)."""
    return -(-seq_len // (2 * cp_size)) * (2 * cp_size)


def check_chunk_len(seq_len: int, cp_size: int, state_len: int) -> None:
    """Each chunk must hold a whole conv halo (the `state_len` tokens a conv reads before a chunk)."""
    L = padded_length(seq_len, cp_size) // (2 * cp_size)
    if max(state_len, 1) > L:
        raise ZayaModelError(
            f"a sequence of {seq_len} tokens over context_parallel {cp_size} gives chunks of {L} tokens, fewer "
            f"than the {max(state_len, 1)} the CCA convs read across a chunk boundary; use longer sequences "
            "or a smaller context_parallel"
        )


def shard_sequence(
    input_ids: torch.Tensor, labels: torch.Tensor, cp: ContextParallel, pad_token_id: int = 0
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
    """This rank's (input_ids [B, 2L], labels [B, 2L], attention_mask [B, 2L] or None) of full [B, T] rows.

    T is padded at the end to 2N·L (`pad_token_id`, label IGNORE_INDEX, mask 0); the mask is None when no
    padding was needed. Every rank of the group passes the same rows."""
    B, T = input_ids.shape
    S = padded_length(T, cp.size)
    mask = None
    if S != T:
        pad = S - T
        input_ids = torch.cat((input_ids, input_ids.new_full((B, pad), pad_token_id)), dim=1)
        labels = torch.cat((labels, labels.new_full((B, pad), IGNORE_INDEX)), dim=1)
        mask = torch.cat((torch.ones(B, T, dtype=torch.long), torch.zeros(B, pad, dtype=torch.long)), dim=1)
    index = cp.positions(2 * (S // (2 * cp.size)), input_ids.device)
    local_mask = mask.to(input_ids.device)[:, index] if mask is not None else None
    return input_ids[:, index], labels[:, index], local_mask


class _GatherRanks(torch.autograd.Function):
    """All-gather over a group, stacked on a new dim 0; backward sums the gradients back to their owner
    (reduce-scatter where the backend has it, NCCL; else all-reduce and take this rank's slice, gloo)."""

    @staticmethod
    def forward(ctx, x: torch.Tensor, group: Any, size: int, rank: int) -> torch.Tensor:  # type: ignore[override]
        ctx.group, ctx.rank = group, rank
        x = x.contiguous()
        out = x.new_empty((size, *x.shape))
        if dist.get_backend(group) == "nccl":  # one buffer, no per-rank copies
            dist.all_gather_into_tensor(out, x, group=group)
        else:
            dist.all_gather(list(out.unbind(0)), x, group=group)
        return out

    @staticmethod
    def backward(ctx, grad: torch.Tensor):  # type: ignore[override]
        grad = grad.contiguous()
        if dist.get_backend(ctx.group) == "nccl":
            mine = grad.new_empty(grad.shape[1:])
            dist.reduce_scatter_tensor(mine, grad, group=ctx.group)
            return mine, None, None, None
        grad = grad.clone()
        dist.all_reduce(grad, group=ctx.group)
        return grad[ctx.rank], None, None, None


def gather_ranks(x: torch.Tensor, cp: ContextParallel) -> torch.Tensor:
    """Every rank's `x` stacked [N, ...] (differentiable)."""
    return _GatherRanks.apply(x, cp.group, cp.size, cp.rank)


def _chunk_order(size: int) -> list[int]:
    """For each global chunk c, its row in the gathered (rank, slot) table: rank·2 + slot."""
    return [2 * c if c < size else 2 * (2 * size - 1 - c) + 1 for c in range(2 * size)]


def gather_sequence(local_B2L: torch.Tensor, cp: ContextParallel) -> torch.Tensor:
    """The whole sequence [B, 2N·L, ...] in global order from every rank's zigzag [B, 2L, ...] (differentiable)."""
    B, T2 = local_B2L.shape[:2]
    L = T2 // 2
    rows = gather_ranks(local_B2L.reshape(B, 2, L, *local_B2L.shape[2:]), cp)  # [N, B, 2, L, ...]
    rows = rows.transpose(0, 1).reshape(B, 2 * cp.size, L, *local_B2L.shape[2:])
    order = torch.tensor(_chunk_order(cp.size), device=local_B2L.device)
    return rows.index_select(1, order).reshape(B, 2 * cp.size * L, *local_B2L.shape[2:])


def exchange_halo(tails_B2X: torch.Tensor, start_B1X: torch.Tensor, cp: ContextParallel) -> torch.Tensor:
    """The state each local chunk starts from [B, 2, X]: the tail of the chunk before it (rows [B, 2, X] of
    every rank's chunk tails, flattened halo values), or `start` for the sequence's first chunk."""
    table = gather_ranks(tails_B2X, cp)  # [N, B, 2, X]
    order = _chunk_order(cp.size)
    out = []
    for c in cp.chunks():
        if c == 0:
            out.append(start_B1X.expand(tails_B2X.shape[0], 1, -1))
            continue
        row = order[c - 1]
        out.append(table[row // 2, :, row % 2 : row % 2 + 1])
    return torch.cat(out, dim=1)


def causal_mask(chunk: int, chunk_len: int, device: torch.device) -> torch.Tensor:
    """Bool [L, (chunk+1)·L]: query i of chunk `chunk` may see global key j when j <= chunk·L + i."""
    q = torch.arange(chunk_len, device=device)[:, None] + chunk * chunk_len
    k = torch.arange((chunk + 1) * chunk_len, device=device)[None, :]
    return k <= q


def chunk_attention(
    q_BHLd: torch.Tensor, k_BKSd: torch.Tensor, v_BKSd: torch.Tensor, chunk: int, fused: bool | None = None
) -> torch.Tensor:
    """Causal attention of chunk `chunk`'s queries [B, H, L, d] over the keys and values [B, K, (chunk+1)·L, d]
    of the sequence up to its end (GQA: query head h reads KV head h // (H / K)).

    fused (default: on CUDA): the lower-right causal bias that flash / memory-efficient kernels apply without
    a mask in memory; SDPA takes it without GQA, so K/V heads are repeated first (under torch.compile building
    the bias is a graph break: the call runs eagerly between compiled pieces). Otherwise a bool mask with GQA
    (CPU; on CUDA a mask with GQA would fall back to the math kernel and its [L, S] scores)."""
    L = q_BHLd.shape[2]
    if chunk == 0:
        return F.scaled_dot_product_attention(q_BHLd, k_BKSd, v_BKSd, is_causal=True, enable_gqa=True)
    if fused if fused is not None else q_BHLd.is_cuda:
        from torch.nn.attention.bias import causal_lower_right

        groups = q_BHLd.shape[1] // k_BKSd.shape[1]
        k, v = k_BKSd.repeat_interleave(groups, dim=1), v_BKSd.repeat_interleave(groups, dim=1)
        return F.scaled_dot_product_attention(q_BHLd, k, v, attn_mask=causal_lower_right(L, k.shape[2]))
    mask = causal_mask(chunk, L, q_BHLd.device)
    return F.scaled_dot_product_attention(q_BHLd, k_BKSd, v_BKSd, attn_mask=mask, enable_gqa=True)


def group_mean_loss(
    local_mean: torch.Tensor, labels: torch.Tensor, ignore_index: int, cp: ContextParallel
) -> torch.Tensor:
    """The mean token loss over the whole group as this rank's value, with this rank's share as its gradient.

    local_mean: the mean over this rank's counted labels. The share is (local sum) / (group count), so the
    gradients of the group's ranks sum to the gradient of the group mean; the value is that mean, the same
    on every rank (one all-reduce of two numbers)."""
    count = (labels != ignore_index).sum().to(torch.float32)
    local_sum = local_mean.float() * count
    totals = torch.stack((count, local_sum.detach()))
    dist.all_reduce(totals, group=cp.group)
    share = local_sum / totals[0].clamp_min(1.0)
    value = totals[1] / totals[0].clamp_min(1.0)
    return share + (value - share).detach()
