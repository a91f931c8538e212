"""Process groups from torchrun's environment, the dp x cp mesh, the expert mesh (EP), and data parallelism (DDP,
FSDP2, HSDP) applied after build."""

from zaya_train.distributed.grad_norm import clip_grad_norm
from zaya_train.distributed.mesh import ParallelMesh, check_context_parallel, parallel_mesh
from zaya_train.distributed.parallelize import (
    finish_gradients,
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
    "clip_grad_norm",
    "finish_gradients",
    "init_distributed",
    "parallel_mesh",
    "parallelize",
    "resolve_compile",
    "set_gradient_sync",
    "transformer_blocks",
]
