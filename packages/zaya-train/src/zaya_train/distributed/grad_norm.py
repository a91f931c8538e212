"""The global gradient norm and its clipping when the gradients live on different meshes.

torch's `clip_grad_norm_` wants every gradient of one kind: all plain tensors, or DTensors of one mesh. Under
expert parallelism they are not: DDP leaves the other parameters plain (replicated) while the experts are
DTensor shards over their EP group; under FSDP2 the experts' units shard over the expert mesh and the rest over
the data-parallel one. So the norm is taken per kind (`torch.nn.utils.get_total_norm`; a DTensor's norm is
reduced over the mesh dims it is sharded on, never over its replicas) and the squares summed; the clip
coefficient then scales each gradient's local tensor in place.
"""

import math
from collections.abc import Iterable

import torch


def clip_grad_norm(parameters: Iterable[torch.Tensor], max_norm: float) -> torch.Tensor:
    """The global L2 norm of the gradients (a plain tensor on their device), after scaling them to `max_norm`
    when above it (`math.inf`: measure only); torch's `clip_grad_norm_` where the gradients are all of one kind."""
    from torch.distributed.tensor import DTensor

    params = [p for p in parameters if p.grad is not None]
    grads = [p.grad for p in params]
    kinds: dict[object, list[torch.Tensor]] = {}
    for grad in grads:
        kinds.setdefault(grad.device_mesh if isinstance(grad, DTensor) else None, []).append(grad)
    if len(kinds) <= 1:  # one kind: torch's own, as before expert parallelism
        norm = torch.nn.utils.clip_grad_norm_(params, max_norm)
        return norm.full_tensor() if isinstance(norm, DTensor) else norm
    norms = []
    for same in kinds.values():
        norm = torch.nn.utils.get_total_norm(same)
        norms.append((norm.full_tensor() if isinstance(norm, DTensor) else norm).float())
    total = torch.stack(norms).square().sum().sqrt()
    if max_norm != math.inf:
        coefficient = (max_norm / (total + 1e-6)).clamp(max=1.0)
        local = [g.to_local() if isinstance(g, DTensor) else g for g in grads]
        torch._foreach_mul_(local, coefficient)
    return total
