"""Which parameters get weight decay and which get Muon: decided once, by module type and shape."""

from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch
from torch import nn

if TYPE_CHECKING:  # the config layer (hydra) stays out of optimizer-only imports (benchmarks)
    from zaya_train.config import OptimizerConfig

_NOT_MATRIX_MODULES = (nn.Embedding, nn.Conv1d, nn.Conv2d, nn.LayerNorm, nn.RMSNorm)


@dataclass
class ParamKind:
    """Classification of one parameter."""

    name: str
    matrix: bool  # a 2-D weight (or a stack of them, e.g. experts): Muon's domain
    decay: bool


def classify_parameters(model: nn.Module, decay_embeddings: bool = False) -> list[tuple[nn.Parameter, ParamKind]]:
    """Every trainable parameter once (tied weights once), with its Muon/decay classification."""
    owner: dict[int, nn.Module] = {}
    for module in model.modules():
        for p in module.parameters(recurse=False):
            owner.setdefault(id(p), module)
    out = []
    for name, p in model.named_parameters():
        if not p.requires_grad:
            continue
        module = owner[id(p)]
        embedding = isinstance(module, nn.Embedding)
        matrix = p.ndim >= 2 and not isinstance(module, _NOT_MATRIX_MODULES) and min(p.shape[-2], p.shape[-1]) > 1
        decay = (p.ndim >= 2 and not embedding) or (embedding and decay_embeddings)
        out.append((p, ParamKind(name, matrix, decay)))
    return out


def parameter_groups(model: nn.Module, cfg: "OptimizerConfig") -> list[dict]:
    """Param groups for the optimizer: (muon?, decay?) combinations, empty ones dropped."""
    buckets: dict[tuple[bool, bool], list[nn.Parameter]] = {}
    names: dict[tuple[bool, bool], list[str]] = {}
    for p, kind in classify_parameters(model, cfg.decay_embeddings):
        key = (kind.matrix and cfg.name == "muon", kind.decay)
        buckets.setdefault(key, []).append(p)
        names.setdefault(key, []).append(kind.name)
    groups = []
    for (muon, decay), params in sorted(buckets.items()):
        groups.append(
            {
                "params": params,
                "use_muon": muon,
                "weight_decay": cfg.weight_decay if decay else 0.0,
                "group_name": f"{'muon' if muon else 'adamw'}{'' if decay else '_no_decay'}",
                "param_names": names[(muon, decay)],
            }
        )
    return groups


def build_optimizer(
    model: nn.Module, cfg: "OptimizerConfig", zero1: bool = False, *, compile_ns: bool = False
) -> torch.optim.Optimizer:
    """The configured optimizer over `model`'s parameter groups (ZeRO-1 sharded across ranks if asked).

    AdamW is torch's fused kernel when every parameter is a plain CUDA tensor. Muon shares its Newton-Schulz
    work among the data-parallel ranks (see muon.py), except under ZeRO-1, where each rank steps only its own
    parameters; `compile_ns` compiles the iteration (CUDA)."""
    from torch.distributed.tensor import DTensor

    from zaya_train.optim.muon import Muon

    groups = parameter_groups(model, cfg)
    for group in groups:
        group.pop("param_names")
    kwargs = dict(lr=0.0, betas=tuple(cfg.betas), eps=cfg.eps)
    params = [p for group in groups for p in group["params"]]
    if cfg.name == "muon":
        kwargs |= dict(momentum=cfg.momentum, nesterov=cfg.nesterov, ns_steps=cfg.ns_steps, rms_scale=cfg.rms_scale)
        kwargs |= dict(shard_work=not zero1, compile_ns=compile_ns)
        cls: type[torch.optim.Optimizer] = Muon
    elif len({p.device_mesh if isinstance(p, DTensor) else None for p in params}) > 1:
        # Parameters of several meshes, or DTensors and plain tensors (expert parallelism): torch's foreach
        # kernels take one kind per call; our Muon class without Muon groups is exactly AdamW and steps local
        # tensors, so it takes them all.
        for group in groups:
            group["use_muon"] = False
        cls = Muon
    else:
        # Our Muon class without Muon groups is exactly AdamW, but torch's fused/foreach AdamW is faster.
        cls = torch.optim.AdamW
        if params and all(p.is_cuda and not isinstance(p, DTensor) for p in params):
            kwargs["fused"] = True
        for group in groups:
            group.pop("use_muon")
    if zero1:
        from torch.distributed.optim import ZeroRedundancyOptimizer

        return ZeroRedundancyOptimizer(groups, optimizer_class=cls, **kwargs)
    return cls(groups, **kwargs)
