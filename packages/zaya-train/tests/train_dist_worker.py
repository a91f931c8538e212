"""A worker for the distributed tests, started by torchrun (or alone): a few real training steps of
zaya1-tiny under the given strategy; rank 0 writes the losses and the full weights to --out."""

import argparse
import json
from pathlib import Path

import torch
import torch.distributed as dist
from zaya_model import ZayaConfig
from zaya_train.build import create_trainer
from zaya_train.config import CheckpointConfig, DataConfig, DistributedConfig, EvalConfig, SourceConfig, TrainConfig
from zaya_train.recipe import PhaseConfig, RecipeConfig, ScheduleConfig


def _full_weights(trainer) -> dict[str, torch.Tensor]:
    from torch.distributed.checkpoint.state_dict import StateDictOptions, get_model_state_dict

    full = get_model_state_dict(trainer.model, options=StateDictOptions(full_state_dict=True, cpu_offload=True))
    return {k: v.detach().cpu().clone() for k, v in full.items()}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--strategy", default="single")
    parser.add_argument("--zero1", action="store_true")
    parser.add_argument("--optimizer", default="muon")
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--precision", default="fp32")
    parser.add_argument("--cache", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    sources = {
        "json": SourceConfig(path="stdlib", glob="json/*.py", exclude=[]),
        "email": SourceConfig(path="stdlib", glob="email/*.py", exclude=[]),
    }
    train = TrainConfig(
        global_batch_size=4,
        micro_batch_size=2,
        max_steps=args.steps,
        precision=args.precision,
        plots=False,
        data=DataConfig(sources=sources, val_fraction=0.2),
        distributed=DistributedConfig(strategy=args.strategy, zero1=args.zero1),
        checkpoint=CheckpointConfig(enabled=True, every_steps=2),
        eval=EvalConfig(every_steps=1000, sequences=4, sample_tokens=0),
    )
    train.optimizer.name = args.optimizer
    recipe = RecipeConfig(
        phases=[
            PhaseConfig(
                name="p0",
                tokens=10**6,
                seq_len=32,
                mixture={"json": 1.0, "email": 1.0},
                schedule=ScheduleConfig(peak_lr=1e-2, warmup_fraction=0.0),
            )
        ]
    )
    run_dir = args.out.parent / f"run-{args.out.stem}"
    trainer = create_trainer(ZayaConfig.from_preset("zaya1-tiny"), train, recipe, run_dir, cache_dir=args.cache)
    trainer.log_every = 1
    trainer.show_progress = False
    summary = trainer.run()
    full = _full_weights(trainer)
    trainer.close()
    # A fresh trainer on the same run dir resumes this strategy's sharded checkpoint of the last step.
    again = create_trainer(ZayaConfig.from_preset("zaya1-tiny"), train, recipe, run_dir, cache_dir=args.cache)
    resumed_step = again.progress.step if again.resume() else None
    reloaded = _full_weights(again)
    again.close()
    resume_exact = all(torch.equal(full[k], reloaded[k]) for k in full)
    if trainer.ctx.is_rank0:
        losses = [
            r["loss"]
            for r in map(json.loads, (run_dir / "metrics.jsonl").read_text().splitlines())
            if r["kind"] == "train"
        ]
        torch.save(
            {
                "losses": losses,
                "val": summary["final_val_loss"],
                "resumed_step": resumed_step,
                "resume_exact": resume_exact,
                "weights": full,
            },
            args.out,
        )
    if dist.is_initialized():
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
