"""The worker of the expert-parallel and HSDP tests (test_train_expert_parallel.py), started by torchrun (or, for
the one-process reference, `main` in the test's process) with --jobs FILE: a JSON list of jobs run in turn in the
same processes, each a fresh trainer of
zaya1-tiny on a real gloo group, all under strict devices (tests/strict_devices.py: every collective checked
against NCCL's device rule). Rank 0 writes each job's results to its --out:

- `losses` (per step), `val`, `grads` (every parameter's gradient as the first optimizer step sees it, after
  the reduction and clipping, gathered whole), `weights` (the full state dict at the end);
- with --count-a2a: `a2a_bytes` (per step, bytes this world's all_to_all_single calls sent to other ranks,
  summed over ranks: measured at the collective) and `remote_pairs` / `routed_pairs` per step (from the routers'
  own counts on every rank: the pairs routed to an expert on another rank of the EP group, and all routed
  pairs), which the test feeds to zaya_model.ep_traffic;
- after a resume: `start_step` and `resumed_weights` (the full state dict as loaded).

A job `["--convert", SRC, DST, LAYOUT]` has rank 0 reshape a checkpoint root with ckpt-reshape while the others
wait. Rank 0 writes the collectives strict devices checked to `strict.json` beside the jobs file.
"""

import argparse
import json
import shutil
import sys
from collections import Counter
from pathlib import Path

import torch
import torch.distributed as dist

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "tests"))
from strict_devices import strict_devices

SENT = Counter()  # bytes all_to_all_single sent to other ranks in this process since the last reset


def _count_all_to_all() -> None:
    """Count the bytes of every all_to_all_single that leave this rank (its own split excluded)."""
    original = dist.all_to_all_single

    def counted(output, input, output_split_sizes=None, input_split_sizes=None, group=None, async_op=False):
        size, me = dist.get_world_size(group), dist.get_rank(group)
        rows = input_split_sizes or [input.shape[0] // size] * size
        row_bytes = input[0].numel() * input.element_size() if input.shape[0] else 0
        SENT["bytes"] += (sum(rows) - rows[me]) * row_bytes
        return original(output, input, output_split_sizes, input_split_sizes, group=group, async_op=async_op)

    dist.all_to_all_single = counted


def _full(tensor: torch.Tensor) -> torch.Tensor:
    return (tensor.full_tensor() if hasattr(tensor, "full_tensor") else tensor).detach().cpu().clone()


def _full_weights(model) -> dict[str, torch.Tensor]:
    from torch.distributed.checkpoint.state_dict import StateDictOptions, get_model_state_dict

    full = get_model_state_dict(model, options=StateDictOptions(full_state_dict=True, cpu_offload=True))
    return {k: v.detach().cpu().clone() for k, v in full.items()}


def _recorder(count_a2a: bool):
    from zaya_train.hooks import TrainerHook

    class Recorder(TrainerHook):
        """Losses per step, the first step's gradients, the loaded weights after a resume, the all-to-all bytes
        and routed pairs per step. Runs before RouterBalancing, which resets the routers' counts."""

        def __init__(self) -> None:
            self.losses: dict[int, float] = {}
            self.start_step: int | None = None
            self.resumed: dict | None = None
            self.grads: dict | None = None
            self.a2a: dict[int, list[int]] = {}

        def wrap_optimizer(self, trainer) -> None:
            step = trainer.optimizer.step

            def recording_step(*args, **kwargs):
                if self.grads is None:
                    self.grads = {n: _full(p.grad) for n, p in trainer.model.named_parameters() if p.grad is not None}
                return step(*args, **kwargs)

            trainer.optimizer.step = recording_step

        def before_step(self, trainer) -> None:
            if self.start_step is None:
                self.start_step = trainer.progress.step
                if self.start_step > 0:
                    self.resumed = _full_weights(trainer.model)
            SENT.clear()

        def after_optimizer_step(self, trainer, metrics) -> None:
            if not count_a2a:
                return
            ep = trainer.model.expert_parallel
            remote = routed = 0
            for layer in trainer.model.layers:
                counts = layer.moe.router.load_counts[:-1].to(torch.int64)  # this rank's pairs per expert
                mine = ep.local_experts(len(counts))
                routed += int(counts.sum())
                remote += int(counts.sum() - counts[mine.start : mine.stop].sum())
            totals = torch.tensor([SENT["bytes"], remote, routed], dtype=torch.int64, device=trainer.ctx.device)
            dist.all_reduce(totals)
            self.a2a[trainer.progress.step + 1] = totals.tolist()

        def after_step(self, trainer, metrics) -> None:
            self.losses[trainer.progress.step] = metrics["loss"]

    return Recorder()


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser()
    parser.add_argument("--strategy", default="single")
    parser.add_argument("--expert-parallel", type=int, default=1)
    parser.add_argument("--context-parallel", type=int, default=1)
    parser.add_argument("--replicate", type=int, default=1)  # train.distributed.data_parallel_replicate
    parser.add_argument("--optimizer", default="muon")
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--seq-len", type=int, default=32)
    parser.add_argument("--checkpoint-every", type=int, default=0)  # 0: no checkpoints
    parser.add_argument("--snapshot-at", type=int, default=None)
    parser.add_argument("--snapshot", type=Path, default=None)
    parser.add_argument("--run-dir", type=Path, default=None)
    parser.add_argument("--count-a2a", action="store_true")
    parser.add_argument("--cache", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    return parser


def run_job(args: argparse.Namespace) -> None:
    from zaya_model import ZayaConfig
    from zaya_train.build import build_trainer
    from zaya_train.config import CheckpointConfig, DataConfig, DistributedConfig, EvalConfig, SourceConfig, TrainConfig
    from zaya_train.hooks import TrainerHook
    from zaya_train.recipe import PhaseConfig, RecipeConfig, ScheduleConfig

    parallel = DistributedConfig(strategy=args.strategy, context_parallel=args.context_parallel,
                                 expert_parallel=args.expert_parallel, data_parallel_replicate=args.replicate)  # fmt: skip
    sources = {name: SourceConfig(path="stdlib", glob=f"{name}/*.py", exclude=[]) for name in ("json", "email")}
    every = args.checkpoint_every
    # two micro-batches of one sequence per rank on 2 ranks (the accumulation runs too), one on 4
    train = TrainConfig(global_batch_size=4, micro_batch_size=1, max_steps=args.steps, plots=False,
                        data=DataConfig(sources=sources, val_fraction=0.2), distributed=parallel,
                        checkpoint=CheckpointConfig(enabled=every > 0, every_steps=max(every, 1)),
                        eval=EvalConfig(every_steps=1000, sequences=4, sample_tokens=0))  # fmt: skip
    train.optimizer.name = args.optimizer
    phase = PhaseConfig(name="p0", tokens=10**6, seq_len=args.seq_len, mixture={"json": 1.0, "email": 1.0},
                        schedule=ScheduleConfig(peak_lr=1e-2, warmup_fraction=0.0))  # fmt: skip
    run_dir = args.run_dir or args.out.parent / f"run-{args.out.stem}"
    groups = {"model": ZayaConfig.from_preset("zaya1-tiny"), "train": train, "recipe": RecipeConfig(phases=[phase])}
    trainer = build_trainer(groups, run_dir, cache_dir=args.cache)
    trainer.log_every = 1
    trainer.show_progress = False
    recorder = _recorder(args.count_a2a)
    recorder.wrap_optimizer(trainer)
    trainer.hooks.insert(0, recorder)

    class Snapshot(TrainerHook):
        def after_step(self, trainer, metrics) -> None:
            if trainer.progress.step == args.snapshot_at and trainer.ctx.is_rank0:
                shutil.copytree(trainer.checkpoints.root, args.snapshot)  # this step's save is committed

    if args.snapshot is not None:
        trainer.hooks.append(Snapshot())
    summary = trainer.run()
    weights = _full_weights(trainer.model)
    trainer.close()
    if trainer.ctx.is_rank0:
        result = {"losses": recorder.losses, "val": summary["final_val_loss"], "grads": recorder.grads,
                  "weights": weights, "start_step": recorder.start_step, "resumed_weights": recorder.resumed,
                  "a2a": recorder.a2a}  # fmt: skip
        torch.save(result, args.out)


def convert_job(src: str, dst: str, layout: str) -> None:
    """Rank 0 reshapes the checkpoint root `src` into `dst` (ckpt-reshape) while the other ranks wait for it to
    appear (it is published whole; the process group may not exist yet, a trainer makes it)."""
    import os
    import time

    if os.environ.get("RANK", "0") == "0":
        from ckpt_reshape import ParallelLayout, convert

        convert(Path(src), Path(dst), "dcp", ParallelLayout.parse(layout), durable=False)
    while not Path(dst).exists():
        time.sleep(0.05)


def main(argv: list[str] | None = None, strict: bool = True) -> None:
    """Run the jobs of `--jobs FILE` (argv: default sys.argv), under strict devices unless `strict` is False."""
    import contextlib

    argv = sys.argv[1:] if argv is None else argv
    spec = Path(argv[argv.index("--jobs") + 1])
    jobs = json.loads(spec.read_text())
    if strict and any("--count-a2a" in job for job in jobs):
        _count_all_to_all()  # under strict devices' own check, which wraps it in turn
    with strict_devices("cpu") if strict else contextlib.nullcontext() as checks:
        for job in jobs:
            if job[0] == "--convert":
                convert_job(*job[1:])
            else:
                run_job(_parser().parse_args(job))
        rank0 = not dist.is_initialized() or dist.get_rank() == 0
        if dist.is_initialized():
            dist.destroy_process_group()
    if strict and rank0:
        (spec.parent / "strict.json").write_text(json.dumps(checks.checked, indent=1))


if __name__ == "__main__":
    main()
