"""The 2-D device mesh of data x context parallelism: world = dp x cp, cp innermost (rank = dp_rank * cp +
cp_rank, so a CP group is neighbouring ranks: one node's NVLink at 8 GPUs or fewer).

The parameters are replicated across a CP group as across a DP group, so DDP, ZeRO-1 and FSDP2 keep running
over the flattened mesh (every rank): their gradient reduction sums over CP as well as DP. Each CP rank's
loss gradient is only its share of its sequences' (zaya_model.context_parallel.group_mean_loss), and the
wrappers average over all dp x cp ranks, so the trainer scales the loss by cp before backward: the result
is the DP average of the CP sums, what one rank computes on the whole sequences. Nothing in the checkpoint
depends on cp (same parameters, same optimizer, same sampler position), so a run resumes on any cp.
"""

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from zaya_train.errors import ZayaTrainError

if TYPE_CHECKING:  # setup.py checks the world against cp with this module's check: no import back at run time
    from zaya_train.distributed.setup import DistributedContext


@dataclass(frozen=True)
class ParallelMesh:
    """This rank's coordinates in the dp x cp mesh, and its CP process group (None when cp == 1)."""

    dp: int
    cp: int
    dp_rank: int
    cp_rank: int
    cp_group: Any = None
    device_mesh: Any = None  # torch DeviceMesh ("dp", "cp") when cp > 1

    def context_parallel(self) -> Any:
        """The model's `ContextParallel` for this mesh (None without CP)."""
        if self.cp == 1:
            return None
        from zaya_model.context_parallel import ContextParallel

        return ContextParallel(self.cp_group, self.cp, self.cp_rank)


def check_context_parallel(world_size: int, cp: int, key: str = "train.distributed.context_parallel") -> None:
    """The world must split into whole CP groups."""
    if cp < 1 or world_size % cp:
        raise ZayaTrainError(
            f"{key} = {cp} does not divide the world size {world_size}; use a divisor of it "
            "(the ranks form a data-parallel x context-parallel mesh)"
        )


def check_mesh(world_size: int, cp: int, ep: int, replicate: int) -> None:
    """The world must split into whole HSDP replicas, each of whole EP and CP groups (one line naming the key).

    The ranks in order: replica (HSDP, outermost), then the shard group's ranks, of which an EP group and a
    CP group are each `ep` / `cp` neighbouring ones (rank % ep is the EP rank, as ckpt-reshape numbers it)."""
    if replicate < 1 or world_size % replicate:
        raise ZayaTrainError(
            f"train.distributed.data_parallel_replicate = {replicate} does not divide the world size {world_size}; "
            "use a divisor of it (HSDP: world = replicas x shard group)"
        )
    shard = world_size // replicate
    where = f"the world size {world_size}"
    if replicate > 1:
        where = f"the HSDP shard group ({shard} = world size {world_size} / data_parallel_replicate {replicate})"
    if ep < 1 or shard % ep:
        raise ZayaTrainError(
            f"train.distributed.expert_parallel = {ep} does not divide {where}; use a divisor of it "
            "(expert-data-parallel x expert-parallel ranks must make the world)"
        )
    if shard % cp:
        raise ZayaTrainError(f"train.distributed.context_parallel = {cp} does not divide {where}; use a divisor of it")


def parallel_mesh(ctx: "DistributedContext", cp: int) -> ParallelMesh:
    """The dp x cp mesh of this world (made once per cp: creating its groups is collective, so every rank
    asks for the same cp at the same point, as phases switch at the same step on every rank)."""
    check_context_parallel(ctx.world_size, cp)
    if cp == 1:
        return ParallelMesh(dp=ctx.world_size, cp=1, dp_rank=ctx.rank, cp_rank=0)
    if cp not in ctx.meshes:
        from torch.distributed.device_mesh import init_device_mesh

        dp = ctx.world_size // cp
        mesh = init_device_mesh(ctx.device.type, (dp, cp), mesh_dim_names=("dp", "cp"))
        ctx.meshes[cp] = ParallelMesh(dp, cp, ctx.rank // cp, ctx.rank % cp, mesh.get_group("cp"), mesh)
    return ctx.meshes[cp]
