"""From a composed config to a ready Trainer: validate, join the process group, build the model, check the
recipe against model and data (every bad input fails here, before any step), prepare the data.
"""

import json
import logging
import random
from pathlib import Path
from typing import Any

import numpy as np
import torch
from omegaconf import DictConfig, OmegaConf

from zaya_train.checkpoint.atomic import atomic_write_text
from zaya_train.config import TrainConfig
from zaya_train.data.pipeline import PreparedData, prepare_data
from zaya_train.data.sampler import MixtureSampler, validation_windows
from zaya_train.data.tokenizer_files import TOKENIZER_DIR, save_tokenizer_folder
from zaya_train.distributed import DistributedContext, init_distributed
from zaya_train.errors import ZayaTrainError
from zaya_train.recipe import RecipeConfig
from zaya_train.trainer import Trainer

log = logging.getLogger("zaya_train")


def check_recipe(recipe: RecipeConfig, train: TrainConfig, max_positions: int, world_size: int) -> None:
    """Reject a recipe the model, the data sources or the batch layout cannot run, naming the fix."""
    sources = set(train.data.sources)
    for i, phase in enumerate(recipe.phases):
        where = f"recipe.phases[{i}] ({phase.name!r})"
        if phase.seq_len > max_positions:
            raise ZayaTrainError(
                f"{where}: seq_len {phase.seq_len} exceeds the model's {max_positions} positions; "
                "lower seq_len or raise model.max_position_embeddings"
            )
        unknown = sorted(set(phase.mixture) - sources)
        if unknown:
            raise ZayaTrainError(
                f"{where}: mixture names unknown sources {unknown}; train.data.sources defines {sorted(sources)}"
            )
        batch = phase.global_batch_size or train.global_batch_size
        if batch % (train.micro_batch_size * world_size):
            raise ZayaTrainError(
                f"{where}: global batch {batch} is not a multiple of micro_batch_size "
                f"{train.micro_batch_size} x {world_size} ranks; change either"
            )
        ramp = phase.batch_ramp
        if ramp is not None and ramp.tokens > 0:
            start = ramp.start_global_batch_size
            if start > batch or start % (train.micro_batch_size * world_size):
                raise ZayaTrainError(
                    f"{where}: batch_ramp.start_global_batch_size {start} must be at most the phase's global batch "
                    f"{batch} and a multiple of micro_batch_size {train.micro_batch_size} x {world_size} ranks"
                )
        step_tokens = batch * phase.seq_len
        if phase.tokens < step_tokens:
            raise ZayaTrainError(
                f"{where}: token budget {phase.tokens} is less than one step "
                f"({batch} sequences x {phase.seq_len} = {step_tokens} tokens); raise tokens"
            )


def check_data(recipe: RecipeConfig, data: PreparedData, val_sequences: int) -> None:
    """Every phase can draw training windows from its mixture and validation windows from every source."""
    for index, phase in enumerate(recipe.phases):
        MixtureSampler(data.train, phase.mixture, phase.seq_len, seed=0, phase=index)
        validation_windows(data.val, phase.seq_len, val_sequences)


def _resolve(path: str, root: str) -> Path:
    p = Path(path).expanduser()
    return p if p.is_absolute() else Path(root) / p


def create_trainer(
    model_cfg: Any,
    train: TrainConfig,
    recipe: RecipeConfig,
    run_dir: Path,
    *,
    cache_dir: Path,
    hardware: Any = None,
    logging_cfg: Any = None,
    ctx: DistributedContext | None = None,
) -> Trainer:
    """A checked Trainer from validated config objects (a `ZayaConfig`, `TrainConfig`, `RecipeConfig`)."""
    from zaya_model import build_model, flops_per_token

    ctx = ctx or init_distributed(train.distributed, train.device)
    if ctx.device.type == "cpu" and train.cpu_threads is not None:
        torch.set_num_threads(train.cpu_threads)
    # The same initial weights on every rank, and every other RNG seeded too, so a config gives one run.
    random.seed(train.seed)
    np.random.seed(train.seed)
    torch.manual_seed(train.seed)
    model = build_model(model_cfg).to(ctx.device)
    check_recipe(recipe, train, int(model.max_positions), ctx.world_size)
    progress = logging_cfg.progress if logging_cfg else True
    data = prepare_data(train.data, Path(cache_dir), is_rank0=ctx.is_rank0, barrier=ctx.barrier, progress=progress)
    if data.tokenizer.vocab_size > model_cfg.vocab_size:
        raise ZayaTrainError(
            f"tokenizer vocab {data.tokenizer.vocab_size} exceeds model.vocab_size "
            f"{model_cfg.vocab_size}; raise model.vocab_size or use a smaller tokenizer"
        )
    check_data(recipe, data, train.eval.sequences)
    trainer = Trainer(
        model,
        train,
        recipe,
        data,
        ctx,
        Path(run_dir),
        hardware=hardware,
        flops_per_token=lambda seq_len: flops_per_token(model_cfg, seq_len, training=True),
        log_every=logging_cfg.log_every_steps if logging_cfg else 10,
        metrics_jsonl=logging_cfg.metrics_jsonl if logging_cfg else True,
        tensorboard=logging_cfg.tensorboard if logging_cfg else False,
        progress=progress,
    )
    if train.eval.downstream.tasks:  # lm-eval tasks during training (the `eval` extra)
        from zaya_train.evals.hook import DownstreamEvalHook

        trainer.hooks.append(DownstreamEvalHook(trainer, train.eval.downstream))
    return trainer


def data_cache_dir(cfg: DictConfig, train: TrainConfig) -> Path:
    """Where the run's shards and trained tokenizers are cached: `train.data.cache_dir`, else
    `paths.cache_dir`/data, relative to `paths.root_dir`."""
    root = OmegaConf.select(cfg, "paths.root_dir", default=".") or "."
    cache = train.data.cache_dir or str(Path(OmegaConf.select(cfg, "paths.cache_dir", default=".cache/zaya")) / "data")
    return _resolve(cache, root)


def build_trainer(cfg: DictConfig, run_dir: Path, ctx: DistributedContext | None = None) -> Trainer:
    """Everything the run needs, checked: the config groups `model`, `train`, `recipe`, `hardware`, `logging`."""
    from zaya_config import validate_config

    objects: dict[str, Any] = validate_config(cfg)
    for key in ("model", "train", "recipe"):
        if key not in objects:
            raise ZayaTrainError(f"config has no `{key}` group; compose one (e.g. {key}=...) in the defaults list")
    train = objects["train"]
    return create_trainer(
        objects["model"],
        train,
        objects["recipe"],
        run_dir,
        cache_dir=data_cache_dir(cfg, train),
        hardware=objects.get("hardware"),
        logging_cfg=objects.get("logging"),
        ctx=ctx,
    )


def resolved_config_yaml(cfg: DictConfig) -> str:
    """The run's config with every default filled in (validated objects), as YAML."""
    from zaya_config import validate_config

    full = OmegaConf.to_container(cfg, resolve=True)
    for key, obj in validate_config(cfg).items():
        node, *path = key.split(".")
        target = full
        for part in [node, *path][:-1]:
            target = target.setdefault(part, {})
        target[key.split(".")[-1]] = OmegaConf.to_container(OmegaConf.structured(obj))
    return OmegaConf.to_yaml(OmegaConf.create(full))


def run_pretraining(cfg: DictConfig, run_dir: Path) -> dict[str, Any]:
    """Build, train to the end of the recipe, and return the summary (the whole `pretrain` service)."""
    trainer = build_trainer(cfg, run_dir)
    try:
        if trainer.ctx.is_rank0:
            atomic_write_text(Path(run_dir) / "config.yaml", resolved_config_yaml(cfg))
            save_tokenizer_folder(
                trainer.data.tokenizer, Path(run_dir) / TOKENIZER_DIR, trainer.cfg.data.tokenizer.eos_token
            )
        summary = trainer.run()
        if trainer.ctx.is_rank0:
            atomic_write_text(Path(run_dir) / "summary.json", json.dumps(summary, indent=2) + "\n")
    finally:
        trainer.close()
        trainer.ctx.close()
    return summary
