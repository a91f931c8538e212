"""Process-group setup from torchrun's environment, or Slurm's where srun started every rank itself
(hydra-submitit-launcher: one task per rank); one process without either is world size 1."""

import datetime
import os
import socket
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import torch
import torch.distributed as dist

from zaya_train.errors import ZayaTrainError

if TYPE_CHECKING:  # the config layer (hydra) stays out of torch-only imports (GPU benchmarks)
    from zaya_train.config import DistributedConfig


@dataclass
class DistributedContext:
    """Where this process sits: rank, world size, device, and the chosen data-parallel strategy."""

    rank: int
    local_rank: int
    world_size: int
    device: torch.device
    strategy: str  # single | ddp | fsdp
    initialized_here: bool = False
    context_parallel: int = 1  # train.distributed.context_parallel: ranks per sequence (distributed/mesh.py)
    meshes: dict[int, Any] = field(default_factory=dict, repr=False)  # cp -> ParallelMesh, made once each
    expert_parallel: int = 1  # train.distributed.expert_parallel: ranks the experts split over (expert_parallel.py)
    data_parallel_replicate: int = 1  # train.distributed.data_parallel_replicate: HSDP replicas (fsdp)
    expert_mesh: Any = field(default=None, repr=False)  # the ExpertMesh, made by parallelize when ep > 1

    @property
    def is_rank0(self) -> bool:
        return self.rank == 0

    @property
    def distributed(self) -> bool:
        return self.world_size > 1

    def barrier(self) -> None:
        """Wait for every rank (no-op alone)."""
        if self.distributed:
            dist.barrier()

    def all_reduce_sum(self, tensor: torch.Tensor) -> torch.Tensor:
        """Sum over ranks in place (no-op alone)."""
        if self.distributed:
            dist.all_reduce(tensor)
        return tensor

    def rank_nodes(self) -> list[str]:
        """The node every rank ran on, by rank (which machines took part; a collective on every rank)."""
        if not self.distributed:
            return [node_name()]
        names: list[Any] = [None] * self.world_size
        dist.all_gather_object(names, node_name())
        return names

    def close(self) -> None:
        """Destroy the process group if this context created it."""
        if self.initialized_here and dist.is_initialized():
            dist.destroy_process_group()


def node_name() -> str:
    """The Slurm node this process runs on (several slurmd may share a host), else the host name."""
    return os.environ.get("SLURMD_NODENAME") or socket.gethostname()


def _device(requested: str, local_rank: int) -> torch.device:
    if requested == "cuda" and not torch.cuda.is_available():
        raise ZayaTrainError("train.device = 'cuda' but no CUDA device is visible; use train.device=cpu or auto")
    if requested == "cpu" or (requested == "auto" and not torch.cuda.is_available()):
        return torch.device("cpu")
    torch.cuda.set_device(local_rank)
    return torch.device("cuda", local_rank)


def ranks_from_slurm() -> None:
    """Each task of an srun step of several tasks, with no torchrun around it, is one rank: RANK, WORLD_SIZE and
    LOCAL_RANK from SLURM_PROCID, SLURM_STEP_NUM_TASKS and SLURM_LOCALID (what hydra-submitit-launcher starts
    under `hydra.launcher.nodes` x `tasks_per_node`). MASTER_ADDR and MASTER_PORT must be set already (the
    zaya_slurm launcher preset's setup exports them for every task)."""
    tasks = int(os.environ.get("SLURM_STEP_NUM_TASKS", "1"))
    if "WORLD_SIZE" in os.environ or tasks <= 1 or "SLURM_PROCID" not in os.environ:
        return
    missing = [v for v in ("MASTER_ADDR", "MASTER_PORT") if not os.environ.get(v)]
    if missing:
        raise ZayaTrainError(f"an srun step of {tasks} tasks is one run of {tasks} ranks, but {', '.join(missing)} "
                             "is not set: export the first node's address and a port (hydra/launcher=zaya_slurm "
                             "does), or start one task per node running torchrun (infra/slurm/srun_torchrun.sh)")  # fmt: skip
    os.environ.update(RANK=os.environ["SLURM_PROCID"], WORLD_SIZE=str(tasks),
                      LOCAL_RANK=os.environ.get("SLURM_LOCALID", "0"))  # fmt: skip


def init_distributed(cfg: "DistributedConfig", device: str = "auto") -> DistributedContext:
    """Join the process group torchrun (or an srun step of several tasks) describes, or run alone."""
    ranks_from_slurm()
    world = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    dev = _device(device, local_rank)
    strategy = cfg.strategy
    if strategy == "auto":
        strategy = "ddp" if world > 1 else "single"
    if strategy == "single" and world > 1:
        raise ZayaTrainError(f"train.distributed.strategy = 'single' but WORLD_SIZE = {world}; use ddp or fsdp")
    initialized_here = False
    if world > 1 and not dist.is_initialized():
        backend = cfg.backend if cfg.backend != "auto" else ("nccl" if dev.type == "cuda" else "gloo")
        if backend == "nccl" and dev.type != "cuda":
            raise ZayaTrainError("train.distributed.backend = 'nccl' needs CUDA; use gloo on CPU")
        dist.init_process_group(
            backend=backend,
            timeout=datetime.timedelta(seconds=cfg.timeout_s),
            device_id=dev if dev.type == "cuda" else None,
        )
        initialized_here = True
    if dist.is_initialized():
        world, rank = dist.get_world_size(), dist.get_rank()
    from zaya_train.distributed.mesh import check_context_parallel, check_mesh

    check_context_parallel(world, cfg.context_parallel)
    check_mesh(world, cfg.context_parallel, cfg.expert_parallel, cfg.data_parallel_replicate)
    return DistributedContext(rank, local_rank, world, dev, strategy, initialized_here, cfg.context_parallel,
                              expert_parallel=cfg.expert_parallel,
                              data_parallel_replicate=cfg.data_parallel_replicate)  # fmt: skip
