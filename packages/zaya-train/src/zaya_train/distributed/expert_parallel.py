"""Expert parallelism applied to a built model: the (expert data parallel) x (expert parallel) mesh, each rank's
E / ep experts as DTensor shards, and where the expert gradients are reduced.

The mesh (`ExpertMesh`): world = edp x ep with ep innermost, so an EP group is `ep` neighbouring ranks and
rank % ep is the EP rank (ckpt-reshape's `ep_rank = dp_rank % ep`: a checkpoint of this run is in the EP layout
ckpt-reshape reads); under HSDP (fsdp with data_parallel_replicate = R) it is R x (world / (R·ep)) x ep. The
data layout does not change: every rank still trains on its own rows of the global batch (or its CP chunks of
them), so EP composes with DP and CP; only the experts move. As torchtitan's `ExpertParallel` does, each stacked
expert tensor becomes a DTensor `Shard(0)` over the EP group (the global expert id on dim 0), so parameter names
and global shapes stay what they are: DCP writes each EP rank's experts as chunks of the global tensor once (the
replicas across edp deduplicated), loads into any other EP size, and a full state dict is the unsplit model.

Gradients. The wrappers average the other parameters over all W ranks (DDP, FSDP2; the trainer scales the loss
by cp). An expert's gradient on its rank already sums over every token of its EP group (the all-to-all's
backward), so the sum over the edp ranks that hold the same experts, divided by W, is the same average:
- DDP: the expert parameters are left out of DDP and `reduce_expert_gradients` all-reduces them over the edp
  group after the last micro-batch (one flat buffer), divided by W (Megatron's expert-data-parallel group);
- FSDP2: each layer's experts are their own FSDP unit over the edp mesh (torchtitan's `dp_mod_ep`), with the
  gradient divide factor set to W.
The router's bias balancing counts every rank's own tokens, all-reduced over the whole world (EP x DP) as
before. Muon's Newton-Schulz sees each expert stack as a dim-0-sharded DTensor: each rank orthogonalises its
own experts, with no communication (optim/muon.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
import torch.distributed as dist
from torch import nn

from zaya_train.errors import ZayaTrainError

EXPERT_TENSORS = ("gate_up", "down")  # the stacked expert parameters of zaya-model's ZayaExperts


@dataclass(frozen=True)
class ExpertMesh:
    """This rank's coordinates in the expert mesh and its groups (module docstring)."""

    ep: int
    edp: int  # ranks holding the same experts
    ep_rank: int
    device_mesh: Any  # ("edp", "ep"), or ("dp_replicate", "edp_shard", "ep") under HSDP
    fsdp_dims: tuple[str, ...]  # the dims of device_mesh the experts' FSDP2 unit shards and replicates over

    @property
    def ep_mesh(self) -> Any:
        return self.device_mesh["ep"]

    @property
    def fsdp_mesh(self) -> Any:
        return self.device_mesh[self.fsdp_dims]

    def model_parallel(self) -> Any:
        """The model's `ExpertParallel` for this mesh."""
        from zaya_model.expert_parallel import ExpertParallel

        return ExpertParallel(self.ep_mesh.get_group(), self.ep, self.ep_rank)

    def edp_group(self) -> Any:
        """The process group of the ranks that hold the same experts (DDP's expert gradient all-reduce)."""
        if len(self.fsdp_dims) != 1:
            raise ZayaTrainError("the expert data-parallel group is one mesh dim except under HSDP (fsdp)")
        return self.device_mesh[self.fsdp_dims[0]].get_group()


def check_model_expert_parallel(model: nn.Module, ep: int) -> None:
    """The model has experts to split and ep divides their number (one line naming the keys)."""
    if ep == 1:
        return
    if not hasattr(model, "set_expert_parallel"):
        raise ZayaTrainError(
            f"train.distributed.expert_parallel = {ep} needs a mixture-of-experts model that can dispatch over ranks "
            f"(set_expert_parallel); {type(model).__name__} cannot: set expert_parallel to 1"
        )
    experts = model.config.num_experts
    if experts % ep:
        raise ZayaTrainError(
            f"train.distributed.expert_parallel = {ep} does not divide model.num_experts = {experts}; use a divisor "
            "of it (each rank holds num_experts / expert_parallel whole experts)"
        )


def expert_mesh(ctx: Any) -> ExpertMesh:
    """The expert mesh of this world (made once: creating its groups is collective)."""
    if ctx.expert_mesh is not None:
        return ctx.expert_mesh
    from torch.distributed.device_mesh import init_device_mesh

    ep, world = ctx.expert_parallel, ctx.world_size
    replicate = ctx.data_parallel_replicate if ctx.strategy == "fsdp" else 1
    if replicate > 1:
        shape, names = (replicate, world // (replicate * ep), ep), ("dp_replicate", "edp_shard", "ep")
    else:
        shape, names = (world // ep, ep), ("edp", "ep")
    mesh = init_device_mesh(ctx.device.type, shape, mesh_dim_names=names)
    ctx.expert_mesh = ExpertMesh(ep, world // ep, ctx.rank % ep, mesh, names[:-1])
    return ctx.expert_mesh


def expert_modules(model: nn.Module) -> list[nn.Module]:
    """The modules holding stacked experts (zaya-model's ZayaExperts), in layer order."""
    return [m for m in model.modules() if hasattr(m, "local_weights") and hasattr(m, "expert_parallel")]


def expert_parameter_names(model: nn.Module) -> list[str]:
    """The fully qualified names of the stacked expert parameters."""
    owners = {id(m) for m in expert_modules(model)}
    return [
        f"{name}.{leaf}" if name else leaf
        for name, module in model.named_modules()
        if id(module) in owners
        for leaf in EXPERT_TENSORS
    ]


@torch.no_grad()
def apply_expert_parallel(model: nn.Module, mesh: ExpertMesh) -> None:
    """Keep this rank's experts of every layer as a DTensor shard over the EP group, and dispatch over it.

    Every rank built the same full weights (same seed), so the slice is taken locally, no communication."""
    from torch.distributed.tensor import DTensor, Shard

    check_model_expert_parallel(model, mesh.ep)
    for experts in expert_modules(model):
        per_rank = experts.num_experts // mesh.ep
        lo = mesh.ep_rank * per_rank
        for leaf in EXPERT_TENSORS:
            full = getattr(experts, leaf)
            local = full.detach()[lo : lo + per_rank].clone()
            shard = DTensor.from_local(local, mesh.ep_mesh, [Shard(0)], run_check=False)
            setattr(experts, leaf, nn.Parameter(shard, requires_grad=full.requires_grad))
    model.set_expert_parallel(mesh.model_parallel())


def checkpoint_layout(ctx: Any) -> dict | None:
    """The layout a checkpoint's manifest records for ckpt-reshape when the experts are split (else None: data
    parallel, which it infers): every rank is a data-parallel rank, EP carved out of them (ep_rank = rank % ep)."""
    if ctx.expert_parallel == 1:
        return None
    return {"dp": ctx.world_size, "ep": ctx.expert_parallel, "fsdp": ctx.strategy == "fsdp"}


def reduce_expert_gradients(model: nn.Module, mesh: ExpertMesh, world_size: int) -> None:
    """DDP with EP: sum every expert gradient over the ranks that hold the same experts and divide by the world
    size (the average DDP takes of the other parameters); one all-reduce of one flat buffer."""
    grads = [g.to_local() for m in expert_modules(model) for g in (m.gate_up.grad, m.down.grad) if g is not None]
    if not grads:
        return
    flat = torch.cat([g.reshape(-1) for g in grads])
    if mesh.edp > 1:
        dist.all_reduce(flat, group=mesh.edp_group())
    flat.div_(world_size)
    torch._foreach_copy_(
        grads, [piece.view_as(g) for piece, g in zip(flat.split([g.numel() for g in grads]), grads, strict=True)]
    )
