"""The second half of `build_trainer`: every part the Trainer uses, built here and handed over, so the
Trainer builds none of its own (the parallelized model, the optimizer, progress and sampler slot, the dp x cp
mesh, the metrics writer, the checkpoint manager with the checkpoint's Stateful parts, Resilience, the hooks).

`build.py` checks the config, model and data first; a part that fails to build here leaves the run dir
unlocked and closes what was already opened.
"""

from pathlib import Path
from typing import Any

import torch

from zaya_train.data.pipeline import PreparedData
from zaya_train.data.sampler_slot import SamplerSlot
from zaya_train.distributed import DistributedContext, parallel_mesh, parallelize, resolve_compile
from zaya_train.distributed.expert_parallel import checkpoint_layout
from zaya_train.hooks import TrainerHook
from zaya_train.metrics import MetricsWriter
from zaya_train.optim import build_optimizer
from zaya_train.resilience.runtime import Resilience
from zaya_train.router_balancing import RouterBalancing
from zaya_train.run_lock import acquire_run_dir, release_run_dir
from zaya_train.train_state import TrainProgress
from zaya_train.trainer import Trainer


def assemble_trainer(
    objects: dict[str, Any],
    model: torch.nn.Module,
    data: PreparedData,
    ctx: DistributedContext,
    run_dir: Path,
    show_progress: bool,
) -> Trainer:
    """The Trainer of the checked `objects` (`model`, `train`, `recipe`, optional `hardware`, `logging`)."""
    from zaya_model import flops_per_token

    model_cfg, train, recipe = objects["model"], objects["train"], objects["recipe"]
    logging_cfg = objects.get("logging")
    hooks: list[TrainerHook] = [RouterBalancing()] if RouterBalancing.applies_to(model) else []
    resilience = Resilience(train.resilience, train.faults, run_dir, ctx.rank, device=ctx.device)
    run_lock = acquire_run_dir(run_dir) if ctx.is_rank0 else None  # one trainer per run dir, before any write
    opened: list[Any] = []  # what a failed build must close again
    try:
        compiled = resolve_compile(train.compile, train.compile_backend, ctx.device)
        wrapped = parallelize(
            model,
            ctx,
            train.precision,
            train.distributed.reshard_after_forward,
            compile=compiled,
            compile_backend=train.compile_backend,
            activation_checkpointing=train.activation_checkpointing,
        )
        zero1 = train.distributed.zero1 and ctx.strategy == "ddp"
        compile_ns = train.optimizer.compile_newton_schulz and compiled and ctx.device.type == "cuda"
        optimizer = build_optimizer(model, train.optimizer, zero1=zero1, compile_ns=compile_ns)
        progress, sampler = TrainProgress(), SamplerSlot()
        jsonl = logging_cfg.metrics_jsonl if logging_cfg else True
        tensorboard = logging_cfg.tensorboard if logging_cfg else False
        metrics = MetricsWriter(run_dir, enabled=jsonl and ctx.is_rank0, tensorboard=tensorboard)
        opened.append(metrics)
        checkpoints = None
        if train.checkpoint.enabled:  # built last of the parts: its folder is made here
            from zaya_train.checkpoint import CheckpointManager
            from zaya_train.checkpoint.trainer_state import checkpoint_parts

            parts = checkpoint_parts(model, optimizer, progress, sampler, resilience, world_size=ctx.world_size,
                                     recipe=recipe.name, zero1=zero1)  # fmt: skip
            root = Path(train.checkpoint.dir) if train.checkpoint.dir else run_dir / "checkpoints"
            cp = train.checkpoint
            checkpoints = CheckpointManager(root, keep_last=cp.keep_last, async_save=cp.async_save, parts=parts,
                                            layout=checkpoint_layout(ctx))  # fmt: skip
            opened.append(checkpoints)
        if train.cluster.straggler.enabled and ctx.world_size > 1:  # ranks compared at logging steps
            from zaya_train.cluster.straggler import StragglerDetector

            hooks.append(StragglerDetector(train.cluster.straggler, model, ctx.rank, ctx.world_size, ctx.device,
                                           resilience.events))  # fmt: skip
        if train.eval.downstream.tasks:  # lm-eval tasks during training (the `eval` extra)
            from zaya_train.evals.hook import DownstreamEvalHook

            hooks.append(DownstreamEvalHook(train.eval.downstream, model, data.tokenizer, train, metrics.path))
        return Trainer(
            train=train,
            recipe=recipe,
            data=data,
            ctx=ctx,
            run_dir=run_dir,
            model=model,
            wrapped=wrapped,
            compiled=compiled,
            optimizer=optimizer,
            zero1=zero1,
            mesh=parallel_mesh(ctx, ctx.context_parallel),  # the first phase's; the Trainer switches it per phase
            progress=progress,
            sampler=sampler,
            metrics=metrics,
            checkpoints=checkpoints,
            resilience=resilience,
            hooks=hooks,
            run_lock=run_lock,
            hardware=objects.get("hardware"),
            flops_per_token=lambda seq_len: flops_per_token(model_cfg, seq_len, training=True),
            log_every=logging_cfg.log_every_steps if logging_cfg else 10,
            progress_bar=show_progress,
        )
    except BaseException:  # a failed build must not keep the run dir locked (or files open)
        for part in reversed(opened):
            part.close()
        release_run_dir(run_lock)
        raise
