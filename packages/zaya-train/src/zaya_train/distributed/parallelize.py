"""Apply activation checkpointing, compilation and data parallelism to a single-device model after it is built,
in torchtitan's order (checkpointing, then per-block compile, then DDP/FSDP2 wrapping): the model code never
knows whether it runs alone, compiled, checkpointed, under DDP or under FSDP2.

Both checkpointing and compilation act on each block in place (its `forward` is wrapped, `nn.Module.compile`
compiles its call), so the module tree and every parameter name stay as they are: checkpoints, HF export and
ckpt-reshape see the same model whatever the settings.
"""

import functools
import shutil
from typing import Any

import torch
from torch import nn

from zaya_train.distributed.setup import DistributedContext
from zaya_train.errors import ZayaTrainError


def transformer_blocks(model: nn.Module) -> list[nn.Module]:
    """The repeated blocks of a model: the elements of its longest nn.ModuleList (its layers)."""
    lists = [m for m in model.modules() if isinstance(m, nn.ModuleList)]
    return list(max(lists, key=len)) if lists else []


def resolve_compile(requested: bool | None, backend: str, device: torch.device) -> bool:
    """Whether to compile: `None` means on for CUDA, off on CPU. Refuses, naming the fix, what cannot work here."""
    if requested is None:
        requested = device.type == "cuda"
    if not requested:
        return False
    from torch._dynamo.eval_frame import is_dynamo_supported

    if not is_dynamo_supported():
        raise ZayaTrainError(
            "train.compile=true but torch.compile does not support this Python/torch build; set train.compile=false"
        )
    if backend == "inductor" and device.type == "cuda":
        from torch.utils._triton import has_triton

        if not has_triton():
            raise ZayaTrainError(
                "train.compile=true with the inductor backend needs Triton on CUDA, which is not installed; "
                "install triton, or set train.compile=false (or train.compile_backend=aot_eager)"
            )
    if backend == "inductor" and device.type == "cpu":
        import os

        if shutil.which(os.environ.get("CXX", "g++")) is None and shutil.which("c++") is None:
            raise ZayaTrainError(
                "train.compile=true with the inductor backend needs a C++ compiler on CPU (none on PATH); "
                "set train.compile=false, or train.compile_backend=aot_eager"
            )
    return True


def check_activation_checkpointing(model: nn.Module, mode: str) -> None:
    """Refuse a checkpointing mode the model cannot take, naming what to set instead."""
    if mode == "none":
        return
    if not transformer_blocks(model):
        raise ZayaTrainError(
            f"train.activation_checkpointing={mode} needs a model with transformer blocks in an nn.ModuleList; "
            f"{type(model).__name__} has none: set train.activation_checkpointing=none"
        )
    if mode == "selective" and not hasattr(torch.utils.checkpoint, "create_selective_checkpoint_contexts"):
        raise ZayaTrainError(
            f"train.activation_checkpointing=selective needs torch >= 2.4 (this is {torch.__version__}); "
            "set train.activation_checkpointing=full"
        )


def _saved_ops() -> set[Any]:
    """Ops whose outputs selective checkpointing keeps: the matmuls and attention (costly to recompute); every
    elementwise op, norm and dispatch step is recomputed in backward (cheap, and most of the activation bytes)."""
    aten = torch.ops.aten
    names = (
        "mm",
        "addmm",
        "bmm",
        "baddbmm",
        "_grouped_mm",
        "_scaled_dot_product_flash_attention",
        "_scaled_dot_product_efficient_attention",
        "_scaled_dot_product_cudnn_attention",
        "_scaled_dot_product_flash_attention_for_cpu",
    )
    return {getattr(aten, name).default for name in names if hasattr(aten, name)}


def _selective_context() -> Any:
    from torch.utils.checkpoint import CheckpointPolicy, create_selective_checkpoint_contexts

    saved = _saved_ops()

    def policy(ctx: Any, op: Any, *args: Any, **kwargs: Any) -> CheckpointPolicy:
        return CheckpointPolicy.MUST_SAVE if op in saved else CheckpointPolicy.PREFER_RECOMPUTE

    return create_selective_checkpoint_contexts(policy)


def apply_activation_checkpointing(blocks: list[nn.Module], mode: str) -> None:
    """Recompute each block's activations in backward: all of them (`full`) or all but the matmul and
    attention outputs (`selective`). Outside autograd (evaluation, generation) blocks run as they are."""
    from torch.utils.checkpoint import checkpoint

    kwargs: dict[str, Any] = {"use_reentrant": False}
    if mode == "selective":
        kwargs["context_fn"] = _selective_context
    for block in blocks:

        @functools.wraps(block.forward)
        def forward(*args: Any, _inner: Any = block.forward, **fkwargs: Any) -> Any:
            if not torch.is_grad_enabled():
                return _inner(*args, **fkwargs)
            return checkpoint(_inner, *args, **kwargs, **fkwargs)

        block.forward = forward


def apply_compile(model: nn.Module, blocks: list[nn.Module], backend: str) -> None:
    """torch.compile each block in place (identical blocks share one graph): through the model's own
    `compile_blocks` where it has one (zaya-model's also compiles its loss kernel), else block by block."""
    if hasattr(model, "compile_blocks"):
        model.compile_blocks(backend=backend)
        return
    for block in blocks:
        block.compile(backend=backend)


def parallelize(
    model: nn.Module,
    ctx: DistributedContext,
    precision: str = "fp32",
    reshard_after_forward: bool = True,
    *,
    compile: bool = False,
    compile_backend: str = "inductor",
    activation_checkpointing: str = "none",
) -> nn.Module:
    """Split the experts (EP), checkpoint, compile and wrap `model` for the context's strategy; returns the
    module to call."""
    blocks = transformer_blocks(model)
    check_activation_checkpointing(model, activation_checkpointing)
    experts: list[nn.Module] = []
    if ctx.expert_parallel > 1:  # first, as torchtitan applies TP/EP before checkpointing, compile and FSDP
        from zaya_train.distributed.expert_parallel import apply_expert_parallel, expert_mesh, expert_modules

        apply_expert_parallel(model, expert_mesh(ctx))
        experts = expert_modules(model)
    if activation_checkpointing != "none":
        apply_activation_checkpointing(blocks, activation_checkpointing)
    if compile:
        apply_compile(model, blocks, compile_backend)
    if ctx.strategy == "ddp":
        from torch.nn.parallel import DistributedDataParallel

        device_ids = [ctx.device.index] if ctx.device.type == "cuda" else None
        if experts:  # their gradients are reduced over the expert-data-parallel group (reduce_expert_gradients)
            from zaya_train.distributed.expert_parallel import expert_parameter_names

            DistributedDataParallel._set_params_and_buffers_to_ignore_for_model(model, expert_parameter_names(model))
        # Buffers (router balancing biases) are updated identically on every rank; no need to broadcast them.
        return DistributedDataParallel(model, device_ids=device_ids, broadcast_buffers=False)
    if ctx.strategy == "fsdp":
        from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

        mesh = data_parallel_mesh(ctx)
        mp = MixedPrecisionPolicy(
            param_dtype=torch.bfloat16 if precision == "bf16" else None, reduce_dtype=torch.float32
        )
        for unit in experts:  # own units over the experts' mesh; the block's unit then skips their parameters
            fully_shard(unit, mesh=ctx.expert_mesh.fsdp_mesh, mp_policy=mp, reshard_after_forward=reshard_after_forward)
            unit.set_gradient_divide_factor(float(ctx.world_size))  # the average every other parameter takes
            # gloo has no PREMUL_SUM (NCCL's scaled sum): sum, then divide. Not on a shard group of one rank, where
            # FSDP2 (torch 2.13) divides its copy by the factor and would then divide again after the sum.
            if ctx.device.type != "cuda" and ctx.expert_mesh.fsdp_mesh.size(-1) > 1:
                unit.set_force_sum_reduction_for_comms(True)
        for block in blocks:
            fully_shard(block, mesh=mesh, mp_policy=mp, reshard_after_forward=reshard_after_forward)
        fully_shard(model, mesh=mesh, mp_policy=mp, reshard_after_forward=reshard_after_forward)
        return model
    return model


def data_parallel_mesh(ctx: DistributedContext) -> Any:
    """FSDP2's mesh: every rank (1-D), or replicate x shard (HSDP, `data_parallel_replicate` > 1: sharded within
    world / R neighbouring ranks, replicated across the R groups; torchtitan's dp_replicate x dp_shard)."""
    from torch.distributed.device_mesh import init_device_mesh

    replicate = ctx.data_parallel_replicate
    if replicate == 1:
        return init_device_mesh(ctx.device.type, (ctx.world_size,))
    shape = (replicate, ctx.world_size // replicate)
    return init_device_mesh(ctx.device.type, shape, mesh_dim_names=("dp_replicate", "dp_shard"))


def finish_gradients(model: nn.Module, ctx: DistributedContext) -> None:
    """After a step's last backward: what the wrapper does not reduce itself (DDP with EP: the experts)."""
    if ctx.strategy == "ddp" and ctx.expert_mesh is not None:
        from zaya_train.distributed.expert_parallel import reduce_expert_gradients

        reduce_expert_gradients(model, ctx.expert_mesh, ctx.world_size)


def set_gradient_sync(wrapped: nn.Module, enabled: bool) -> None:
    """Skip the gradient all-reduce on all but the last micro-batch of an accumulation (DDP and FSDP2)."""
    if hasattr(wrapped, "set_requires_gradient_sync"):
        wrapped.set_requires_gradient_sync(enabled)
    elif hasattr(wrapped, "require_backward_grad_sync"):
        wrapped.require_backward_grad_sync = enabled
