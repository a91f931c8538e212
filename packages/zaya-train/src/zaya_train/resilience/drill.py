"""A fault drill: a tiny, deterministic, real training run (zaya1-tiny on two stdlib packages) that can be
killed, preempted or poisoned at will, and that ends by writing a hash of its whole final state.

    python -m zaya_train.resilience.drill --run-dir RUN --cache-dir CACHE --steps 12 --every 2 \
        [--async-save] [--fault kind:step ...]      # or under torchrun --nproc-per-node 2 --max-restarts 3

Two drills with the same arguments end with the same `final_state.json` hash however often they were
SIGKILLed and restarted in between: that is the exact-resume guarantee the tests and benchmarks/soak.py
check. The hash covers weights, optimizer state, progress (step, tokens, loss and validation history),
sampler position and RNG states; `metrics_digest` covers the per-step train metrics in metrics.jsonl.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
from pathlib import Path
from typing import Any

from zaya_train.metrics.step_timer import MEASURED_FIELDS

FINAL_STATE_NAME = "final_state.json"


def _feed(digest: Any, value: Any) -> None:
    """Hash nested state deterministically: tensors by dtype, shape and bytes; containers in key order."""
    import numpy as np
    import torch

    if isinstance(value, torch.Tensor):
        t = value.detach().cpu().contiguous().reshape(-1)
        digest.update(f"T{value.dtype}{tuple(value.shape)}".encode())
        digest.update(t.view(torch.uint8).numpy().tobytes() if t.numel() else b"")
    elif isinstance(value, np.ndarray):
        digest.update(f"A{value.dtype}{value.shape}".encode() + np.ascontiguousarray(value).tobytes())
    elif isinstance(value, dict):
        for key in sorted(value, key=str):
            digest.update(f"K{key}".encode())
            _feed(digest, value[key])
    elif isinstance(value, list | tuple):
        digest.update(f"L{len(value)}".encode())
        for item in value:
            _feed(digest, item)
    elif isinstance(value, float):
        digest.update(b"F" + (b"nan" if math.isnan(value) else float.hex(value).encode()))
    else:
        digest.update(f"V{value!r}".encode())


def state_hash(value: Any) -> str:
    """sha256 of any nested state (tensors, arrays, dicts, lists, scalars), bitwise."""
    digest = hashlib.sha256()
    _feed(digest, value)
    return digest.hexdigest()


def metrics_by_step(run_dir: Path) -> dict[int, dict[str, Any]]:
    """Per-step train metrics from metrics.jsonl (the last record of a step wins: a resumed run rewrites
    the steps it recomputes); wall-clock fields are left out."""
    records: dict[int, dict[str, Any]] = {}
    path = Path(run_dir) / "metrics.jsonl"
    for line in path.read_text(encoding="utf-8").splitlines() if path.exists() else []:
        try:
            record = json.loads(line)
        except json.JSONDecodeError:  # a line torn by a SIGKILL
            continue
        if record.get("kind") == "train":
            records[record["step"]] = {k: v for k, v in record.items() if k not in MEASURED_FIELDS}
    return records


def final_state(trainer: Any) -> dict[str, Any]:
    """Hashes of the trainer's whole state (call on every rank; rank 0's view is written)."""
    from torch.distributed.checkpoint.state_dict import get_model_state_dict, get_optimizer_state_dict

    from zaya_train.train_state import rng_state

    model = get_model_state_dict(trainer.model)
    optim = get_optimizer_state_dict(trainer.model, trainer.optimizer)
    sampler = trainer.sampler.state_dict() if trainer.sampler is not None else None  # as a checkpoint holds them
    parts = {
        "model": state_hash(model),
        "optim": state_hash(optim),
        "progress": state_hash(trainer.progress.state_dict()),
        "sampler": state_hash(sampler),
        "rng": state_hash(rng_state()),
    }
    return {
        "state_hash": state_hash(parts),
        "parts": parts,
        "step": trainer.progress.step,
        "sampler_state": sampler,
        "metrics_digest": state_hash(metrics_by_step(trainer.run_dir)),
    }


def build_drill_trainer(args: argparse.Namespace) -> Any:
    """The real Trainer on a shrunken zaya1-tiny, two small stdlib sources, checkpoints every `args.every` steps."""
    import random

    import numpy as np
    from zaya_model import ZayaConfig

    from zaya_train.build import build_trainer
    from zaya_train.config import CheckpointConfig, DataConfig, EvalConfig, OptimizerConfig, SourceConfig, TrainConfig
    from zaya_train.recipe import PhaseConfig, RecipeConfig, ScheduleConfig
    from zaya_train.resilience.config import (
        AnomalyConfig,
        CrashLoopConfig,
        FaultsConfig,
        FaultSpec,
        ResilienceConfig,
        WatchdogConfig,
    )

    faults = []
    for text in args.fault:
        kind, step, *rank = text.split(":")
        spec = FaultSpec(kind=kind, at_step=int(step), rank=int(rank[0]) if rank else None, once=not args.faults_repeat)
        spec.validate()
        faults.append(spec)
    sources = {
        "json": SourceConfig(path="stdlib", glob="json/*.py", exclude=[]),
        "email": SourceConfig(path="stdlib", glob="email/*.py", exclude=[]),
    }
    seq_len, batch = 32, 4
    train = TrainConfig(
        seed=args.seed,
        global_batch_size=batch,
        micro_batch_size=2,
        max_steps=args.steps,
        device="cpu",
        optimizer=OptimizerConfig(name=args.optimizer),
        data=DataConfig(sources=sources, val_fraction=0.2),
        checkpoint=CheckpointConfig(every_steps=args.every, keep_last=2, async_save=args.async_save),
        eval=EvalConfig(every_steps=args.eval_every, sequences=4, sample_tokens=0),
        resilience=ResilienceConfig(
            anomaly=AnomalyConfig(policy=args.anomaly_policy, window=8, min_history=4),
            crash_loop=CrashLoopConfig(max_same_step_failures=args.max_same_step_failures),
            watchdog=WatchdogConfig(
                timeout_s=args.hang_timeout_s, first_step_timeout_s=max(120.0, args.hang_timeout_s)
            ),
        ),
        faults=FaultsConfig(seed=args.seed, injections=faults),
        plots=False,
    )
    train.validate()
    phase = PhaseConfig(name="drill", tokens=args.steps * 4 * batch * seq_len, seq_len=seq_len,
                        mixture={"json": 1.0, "email": 1.0}, schedule=ScheduleConfig(peak_lr=3e-3, warmup_fraction=0.1))  # fmt: skip
    recipe = RecipeConfig(name="drill", phases=[phase])
    recipe.validate()
    model_cfg = ZayaConfig.from_preset("zaya1-tiny", num_hidden_layers=1)
    random.seed(args.seed)  # the Trainer seeds torch; python's and numpy's RNGs are part of the hashed state
    np.random.seed(args.seed)
    groups = {"model": model_cfg, "train": train, "recipe": recipe}
    trainer = build_trainer(groups, Path(args.run_dir), cache_dir=Path(args.cache_dir))
    trainer.show_progress = False
    return trainer


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """The drill's command line (see the module docstring)."""
    parser = argparse.ArgumentParser(description="a tiny real training run for fault drills")
    parser.add_argument("--run-dir", required=True)
    parser.add_argument("--cache-dir", required=True)
    parser.add_argument("--steps", type=int, default=12)
    parser.add_argument("--every", type=int, default=2, help="checkpoint every N steps")
    parser.add_argument("--eval-every", type=int, default=5)
    parser.add_argument("--async-save", action="store_true")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--optimizer", default="muon", choices=("muon", "adamw"))
    parser.add_argument("--anomaly-policy", default="skip", choices=("skip", "rollback", "raise"))
    parser.add_argument("--hang-timeout-s", type=float, default=600.0)
    parser.add_argument("--fault", action="append", default=[], help="kind:step[:rank], e.g. crash:5:1 (repeatable)")
    parser.add_argument("--max-same-step-failures", type=int, default=3)
    parser.add_argument("--faults-repeat", action="store_true", help="fire on every attempt (a crash loop)")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    """Run (or resume) the drill to its last step, then write final_state.json on rank 0."""
    import logging

    from zaya_config.atomic import write_text_atomic

    logging.basicConfig(level=logging.WARNING)
    args = parse_args(argv)
    trainer = build_drill_trainer(args)
    try:
        trainer.run()
        result = final_state(trainer)
        if trainer.ctx.is_rank0:
            write_text_atomic(Path(args.run_dir) / FINAL_STATE_NAME, json.dumps(result, indent=1))
            print(json.dumps({"state_hash": result["state_hash"], "step": result["step"]}), flush=True)
    finally:
        trainer.close()
        trainer.ctx.close()


if __name__ == "__main__":
    main()
