"""One candidate's training throughput, measured with zaya-train's own Trainer (its public builder, its step).

The trainer is built by `zaya_train.build.build_trainer` from the composed `train` and `recipe` groups with the
candidate's model config, exactly as `zaya run pretrain` builds one (compilation, activation checkpointing,
precision and optimizer as the `train` group says), minus checkpoints and plots. A timed step is
`sampler.next_batch` + `Trainer.train_step` at the trainer's global batch (gradient accumulation over its
micro-batches), as `Trainer.run` does, synchronised with the device at its end.
"""

import dataclasses
import gc
import statistics
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from zaya_config import HardwareProfile
from zaya_config.log_config import LoggingConfig
from zaya_model import ZayaConfig

from collbench.errors import CollbenchError
from collbench.timing import sync


@dataclass
class TrainSetup:
    """What every candidate's trainer is built from (the composed `train`, `recipe`, `hardware` groups)."""

    train: Any  # zaya_train.config.TrainConfig
    recipe: Any  # zaya_train.recipe.RecipeConfig
    hardware: HardwareProfile
    cache_dir: Path  # prepared data shards, shared by the candidates
    run_root: Path  # each candidate's trainer writes under run_root/<candidate>

    @property
    def seq_len(self) -> int:
        """The first phase's sequence length (the one measured)."""
        return self.recipe.phases[0].seq_len

    @property
    def global_batch(self) -> int:
        """Sequences per optimizer step in the first phase (no batch ramp: measured at the full batch)."""
        return self.recipe.phases[0].global_batch_size or self.train.global_batch_size

    @property
    def micro_batch(self) -> int:
        """Sequences per forward pass."""
        return min(self.train.micro_batch_size, self.global_batch)


@dataclass
class TrainMeasurement:
    """Median step time of the timed steps (fastest and slowest beside it) and what it means."""

    step_s: float
    step_s_min: float
    step_s_max: float
    tokens_per_step: int
    tokens_per_s: float
    model_tflops: float  # model FLOP/s achieved (zaya-model's FLOP accounting x tokens/s)
    mfu: float
    device: str


def measurement_train_config(train: Any) -> Any:
    """The `train` group with checkpoints, plots, downstream evals and the batch ramp's effect left out."""
    return dataclasses.replace(
        train,
        checkpoint=dataclasses.replace(train.checkpoint, enabled=False),
        eval=dataclasses.replace(train.eval, downstream=dataclasses.replace(train.eval.downstream, tasks=[])),
        plots=False,
    )


def measurement_recipe(recipe: Any) -> Any:
    """The recipe's first phase without its batch ramp: every timed step runs the phase's full global batch."""
    first = dataclasses.replace(recipe.phases[0], batch_ramp=None)
    return dataclasses.replace(recipe, phases=[first])


def time_steps(trainer: Any, warmup: int, steps: int) -> tuple[list[float], int]:
    """Seconds of each of `steps` real steps (data draw + `train_step`, synchronised) after `warmup` untimed ones,
    and the tokens in a step."""
    trainer.enter_phase(0)
    device = trainer.ctx.device

    def step() -> dict[str, Any]:
        return trainer.train_step(trainer.sampler.next_batch(trainer.global_batch_size()))

    for _ in range(warmup):
        step()
    sync(device)
    times = []
    for _ in range(steps):
        start = time.perf_counter()
        metrics = step()
        sync(device)
        times.append(time.perf_counter() - start)
    return times, int(metrics["tokens_in_step"])


def measure_training(model_cfg: ZayaConfig, setup: TrainSetup, name: str, warmup: int, steps: int) -> TrainMeasurement:
    """Build the candidate's Trainer and time `steps` real steps after `warmup` untimed ones."""
    try:
        from zaya_train.build import build_trainer
        from zaya_train.metrics import mfu
    except ImportError as err:
        raise CollbenchError(
            f"sizing.measure needs zaya-train ({err}); pip install packages/zaya-train, or set sizing.measure=false"
        ) from None

    if torch.cuda.is_available():
        torch._dynamo.reset()  # each candidate compiles afresh, as its own training process would
    objects = {
        "model": model_cfg,
        "train": measurement_train_config(setup.train),
        "recipe": measurement_recipe(setup.recipe),
        "hardware": setup.hardware,
        "logging": LoggingConfig(progress=False, metrics_jsonl=False),
    }
    trainer = build_trainer(objects, setup.run_root / name, cache_dir=setup.cache_dir)
    try:
        times, tokens = time_steps(trainer, warmup, steps)
        fpt = trainer.flops_per_token(setup.seq_len)
        step_s = statistics.median(times)
        tps = tokens / step_s
        return TrainMeasurement(
            step_s=step_s,
            step_s_min=min(times),
            step_s_max=max(times),
            tokens_per_step=tokens,
            tokens_per_s=tps,
            model_tflops=tps * fpt / 1e12,
            mfu=mfu(tps, fpt, setup.hardware, trainer.cfg.precision, trainer.ctx.world_size),
            device=str(trainer.ctx.device),
        )
    finally:
        trainer.close()
        trainer.ctx.close()
        del trainer  # weights, gradients and optimizer state go before the decoder's model is built
        gc.collect()
        if torch.cuda.is_available():
            torch.cuda.empty_cache()
