"""Apply data parallelism to a single-device model, after it is built (as torchtitan's parallelize.py):
the model code never knows whether it runs alone, under DDP or under FSDP2.
"""

import torch
from torch import nn

from zaya_train.distributed.setup import DistributedContext


def transformer_blocks(model: nn.Module) -> list[nn.Module]:
    """The repeated blocks of a model: the elements of its longest nn.ModuleList (its layers)."""
    lists = [m for m in model.modules() if isinstance(m, nn.ModuleList)]
    return list(max(lists, key=len)) if lists else []


def parallelize(
    model: nn.Module, ctx: DistributedContext, precision: str = "fp32", reshard_after_forward: bool = True
) -> nn.Module:
    """Wrap `model` for the context's strategy; returns the module to call for forward/backward."""
    if ctx.strategy == "ddp":
        from torch.nn.parallel import DistributedDataParallel

        device_ids = [ctx.device.index] if ctx.device.type == "cuda" else None
        # Buffers (router balancing biases) are updated identically on every rank; no need to broadcast them.
        return DistributedDataParallel(model, device_ids=device_ids, broadcast_buffers=False)
    if ctx.strategy == "fsdp":
        from torch.distributed.device_mesh import init_device_mesh
        from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

        mesh = init_device_mesh(ctx.device.type, (ctx.world_size,))
        mp = MixedPrecisionPolicy(
            param_dtype=torch.bfloat16 if precision == "bf16" else None, reduce_dtype=torch.float32
        )
        for block in transformer_blocks(model):
            fully_shard(block, mesh=mesh, mp_policy=mp, reshard_after_forward=reshard_after_forward)
        fully_shard(model, mesh=mesh, mp_policy=mp, reshard_after_forward=reshard_after_forward)
        return model
    return model


def set_gradient_sync(wrapped: nn.Module, enabled: bool) -> None:
    """Skip the gradient all-reduce on all but the last micro-batch of an accumulation (DDP and FSDP2)."""
    if hasattr(wrapped, "set_requires_gradient_sync"):
        wrapped.set_requires_gradient_sync(enabled)
    elif hasattr(wrapped, "require_backward_grad_sync"):
        wrapped.require_backward_grad_sync = enabled
