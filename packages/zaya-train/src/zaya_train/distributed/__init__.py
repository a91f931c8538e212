"""Process groups from torchrun's environment, the dp x cp mesh, and data parallelism (DDP, FSDP2) applied after build."""

from zaya_train.distributed.mesh import ParallelMesh, check_context_parallel, parallel_mesh
from zaya_train.distributed.parallelize import (
    parallelize,
    resolve_compile,
    set_gradient_sync,
    transformer_blocks,
)
from zaya_train.distributed.setup import DistributedContext, init_distributed

__all__ = [
    "DistributedContext",
    "ParallelMesh",
    "check_context_parallel",
    "init_distributed",
    "parallel_mesh",
    "parallelize",
    "resolve_compile",
    "set_gradient_sync",
    "transformer_blocks",
]
