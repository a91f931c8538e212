"""From a config to a ready Trainer (`build_trainer`): validate, join the process group, build the model, check
the recipe against model and data (every bad input fails here, before any step), prepare the data; then
`assembly.py` builds every part the Trainer uses and hands them to it.
"""

import json
import logging
import random
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import torch
from omegaconf import DictConfig, OmegaConf
from zaya_config.atomic import write_text_atomic
from zaya_model.context_parallel import check_chunk_len, padded_length
from zaya_model.errors import ZayaModelError

from zaya_train.assembly import assemble_trainer
from zaya_train.config import TrainConfig
from zaya_train.data.cache_dir import data_cache_dir
from zaya_train.data.pipeline import PreparedData, prepare_data
from zaya_train.data.sampler import MixtureSampler, validation_windows
from zaya_train.data.tokenizer_files import TOKENIZER_DIR, save_tokenizer_folder
from zaya_train.distributed import DistributedContext, check_context_parallel, init_distributed
from zaya_train.distributed.expert_parallel import check_model_expert_parallel
from zaya_train.errors import ZayaTrainError
from zaya_train.recipe import RecipeConfig
from zaya_train.trainer import Trainer

log = logging.getLogger("zaya_train")


def check_recipe(
    recipe: RecipeConfig, train: TrainConfig, max_positions: int, world_size: int, halo_len: int = 0
) -> None:
    """Reject a recipe the model, the data sources or the batch layout cannot run, naming the fix.

    halo_len: the tokens a context-parallel chunk reads from the one before it (the model's conv state)."""
    sources = set(train.data.sources)
    for i, phase in enumerate(recipe.phases):
        where = f"recipe.phases[{i}] ({phase.name!r})"
        cp = phase.context_parallel or train.distributed.context_parallel
        key = f"recipe.phases[{i}].context_parallel" if phase.context_parallel else "train.distributed.context_parallel"
        check_context_parallel(world_size, cp, key)
        if cp > 1 and train.data.document_masking:
            raise ZayaTrainError(
                f"{where}: train.data.document_masking is not supported with {key} = {cp}; turn one of them off"
            )
        # a CP phase pads its sequences at the end to whole chunks (2 x cp of them)
        positions = padded_length(phase.seq_len, cp) if cp > 1 else phase.seq_len
        if positions > max_positions:
            padded = f" (padded to {positions} for context_parallel {cp})" if positions != phase.seq_len else ""
            raise ZayaTrainError(
                f"{where}: seq_len {phase.seq_len}{padded} exceeds the model's {max_positions} positions; "
                "lower seq_len or raise model.max_position_embeddings"
            )
        if cp > 1:
            try:
                check_chunk_len(phase.seq_len, cp, halo_len)
            except ZayaModelError as err:
                raise ZayaTrainError(f"{where}: {err}") from None
        dp = world_size // cp  # the batch splits over the data-parallel ranks
        unknown = sorted(set(phase.mixture) - sources)
        if unknown:
            raise ZayaTrainError(
                f"{where}: mixture names unknown sources {unknown}; train.data.sources defines {sorted(sources)}"
            )
        batch = phase.global_batch_size or train.global_batch_size
        if batch % (train.micro_batch_size * dp):
            raise ZayaTrainError(
                f"{where}: global batch {batch} is not a multiple of micro_batch_size "
                f"{train.micro_batch_size} x {dp} data-parallel ranks; change either"
            )
        ramp = phase.batch_ramp
        if ramp is not None and ramp.tokens > 0:
            start = ramp.start_global_batch_size
            if start > batch or start % (train.micro_batch_size * dp):
                raise ZayaTrainError(
                    f"{where}: batch_ramp.start_global_batch_size {start} must be at most the phase's global batch "
                    f"{batch} and a multiple of micro_batch_size {train.micro_batch_size} x {dp} data-parallel "
                    "ranks"
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


_GROUPS = ("model", "train", "recipe", "hardware", "logging")


def build_trainer(
    cfg: DictConfig | Mapping[str, Any],
    run_dir: Path,
    *,
    cache_dir: Path | None = None,
    ctx: DistributedContext | None = None,
) -> Trainer:
    """A checked, ready Trainer: the one way to build one.

    `cfg` is either a composed config (a DictConfig with the groups `model`, `train`, `recipe` and optionally
    `hardware`, `logging`; validated here) or those groups as validated objects, e.g.
    `{"model": ZayaConfig.from_preset("zaya1-tiny"), "train": TrainConfig(...), "recipe": RecipeConfig(...)}`.
    The data cache is `cache_dir`, else `train.data.cache_dir`, else `paths.cache_dir`/data (DictConfig) or
    `.cache/zaya/data`. `ctx` is an existing process group context (else one is joined from `train.distributed`).
    The builder seeds every RNG, builds the model, checks recipe, data and tokenizer against it (every bad input
    fails here, before any step), and passes the hooks in: `Resilience` from `train.resilience`/`train.faults`,
    `RouterBalancing` for models with routers, `DownstreamEvalHook` when `train.eval.downstream.tasks` is set.
    """
    if isinstance(cfg, DictConfig):
        from zaya_config import validate_config

        objects: dict[str, Any] = validate_config(cfg)
    else:
        objects = dict(cfg)
        unknown = sorted(set(objects) - set(_GROUPS))
        if unknown:
            raise ZayaTrainError(f"build_trainer got unknown groups {unknown}; it takes {list(_GROUPS)}")
    for key in ("model", "train", "recipe"):
        if key not in objects:
            raise ZayaTrainError(f"config has no `{key}` group; compose one (e.g. {key}=...) in the defaults list")
    train: TrainConfig = objects["train"]
    if cache_dir is None:
        if isinstance(cfg, DictConfig):
            cache_dir = data_cache_dir(cfg, train)
        else:
            cache_dir = Path(train.data.cache_dir or Path(".cache/zaya") / "data")
    return _assemble(objects, Path(run_dir), Path(cache_dir), ctx)


def _assemble(objects: dict[str, Any], run_dir: Path, cache_dir: Path, ctx: DistributedContext | None) -> Trainer:
    from zaya_model import build_model

    model_cfg, train, recipe = objects["model"], objects["train"], objects["recipe"]
    logging_cfg = objects.get("logging")
    ctx = ctx or init_distributed(train.distributed, train.device)
    if ctx.device.type == "cpu" and train.cpu_threads is not None:
        torch.set_num_threads(train.cpu_threads)
    # The same initial weights on every rank, and every other RNG seeded too, so a config gives one run.
    random.seed(train.seed)
    np.random.seed(train.seed)
    torch.manual_seed(train.seed)
    with torch.device(ctx.device):  # initialised where it trains: 40 layers are 35 GB of fp32 to draw and copy
        model = build_model(model_cfg)
    check_model_expert_parallel(model, ctx.expert_parallel)
    check_recipe(recipe, train, int(model.max_positions), ctx.world_size, model.config.conv_state_len)
    progress = logging_cfg.progress if logging_cfg else True
    data = prepare_data(train.data, cache_dir, is_rank0=ctx.is_rank0, barrier=ctx.barrier, progress=progress)
    if data.tokenizer.vocab_size > model_cfg.vocab_size:
        raise ZayaTrainError(
            f"tokenizer vocab {data.tokenizer.vocab_size} exceeds model.vocab_size "
            f"{model_cfg.vocab_size}; raise model.vocab_size or use a smaller tokenizer"
        )
    check_data(recipe, data, train.eval.sequences)
    return assemble_trainer(objects, model, data, ctx, run_dir, progress)


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
            write_text_atomic(Path(run_dir) / "config.yaml", resolved_config_yaml(cfg))
            save_tokenizer_folder(
                trainer.data.tokenizer, Path(run_dir) / TOKENIZER_DIR, trainer.cfg.data.tokenizer.eos_token
            )
        summary = trainer.run()
        if trainer.ctx.is_rank0:
            write_text_atomic(Path(run_dir) / "summary.json", json.dumps(summary, indent=2) + "\n")
    finally:
        trainer.close()
        trainer.ctx.close()
    return summary
