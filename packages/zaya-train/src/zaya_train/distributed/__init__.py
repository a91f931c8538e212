"""Process groups from torchrun's environment and data parallelism (DDP, FSDP2) applied after build."""

from zaya_train.distributed.parallelize import (
    parallelize,
    resolve_compile,
    set_gradient_sync,
    transformer_blocks,
)
from zaya_train.distributed.setup import DistributedContext, init_distributed

__all__ = [
    "DistributedContext",
    "init_distributed",
    "parallelize",
    "resolve_compile",
    "set_gradient_sync",
    "transformer_blocks",
]
