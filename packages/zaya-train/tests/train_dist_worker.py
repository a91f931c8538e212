"""A worker for the distributed tests, started by torchrun (or alone; the tests run one-process jobs in their own
process through `run_job`): a few real training steps of zaya1-tiny under the given strategy; rank 0 writes the
losses and the full weights to --out.

With --snapshot-at K --snapshot DIR, rank 0 copies the committed checkpoint root after step K to DIR (training
goes on; --snapshot may be given again for more copies, such as a later job's run-dir/checkpoints: the
collectives of steps after K wait for the copy, so a later job of the launch finds it complete). A run dir that already holds checkpoints (--run-dir) resumes from them; rank 0 then also writes the
optimizer state every rank holds right after the resume, by parameter name, and which rank holds it.

With --jobs FILE (a JSON list of argument lists, each with its own --out), the same processes run every job in
turn, each on a fresh trainer and model (build_trainer reseeds every RNG) in the one process group: the tests
pay the interpreter, torch import and gloo start-up of a launch once for all the runs of that world size."""

import argparse
import json
import shutil
import sys
from pathlib import Path

import torch
import torch.distributed as dist
from zaya_model import ZayaConfig
from zaya_train.build import build_trainer
from zaya_train.config import CheckpointConfig, DataConfig, DistributedConfig, EvalConfig, SourceConfig, TrainConfig
from zaya_train.hooks import TrainerHook
from zaya_train.recipe import PhaseConfig, RecipeConfig, ScheduleConfig


def _full_weights(trainer) -> dict[str, torch.Tensor]:
    from torch.distributed.checkpoint.state_dict import StateDictOptions, get_model_state_dict

    full = get_model_state_dict(trainer.model, options=StateDictOptions(full_state_dict=True, cpu_offload=True))
    return {k: v.detach().cpu().clone() for k, v in full.items()}


def _optimizer_state_by_name(trainer) -> dict[str, dict[str, torch.Tensor]]:
    """This rank's optimizer state (ZeRO-1: its local optimizer's), keyed by parameter name."""
    from zaya_train.optim.zero1_state import local_optimizer, parameter_names

    names = parameter_names(trainer.model)
    state = local_optimizer(trainer.optimizer).state
    return {names[p]: {k: v.detach().cpu().clone() for k, v in entry.items()} for p, entry in state.items()}


class Recorder(TrainerHook):
    """Trainer hook: each step's loss, the optimizer state after a resume, the snapshot copy."""

    def __init__(self, snapshot_at: int | None, snapshots: list[Path]) -> None:
        self.snapshot_at, self.snapshots = snapshot_at, snapshots
        self.start_step: int | None = None
        self.resumed_optim: dict[int, dict] = {}  # rank -> {fqn: {name: tensor}}
        self.losses: dict[int, float] = {}
        self.picks: dict[int, list] = {}  # step -> this rank's (source, window) picks, as the sampler gave them

    def _record_picks(self, trainer) -> None:
        """Wrap the sampler's per-rank draw (a new sampler comes with each phase) to keep what this rank read."""
        sampler = trainer.sampler
        if getattr(sampler, "_recorded_by", None) is self:
            return
        draw = sampler.next_rank_picks

        def recorded(*args, **kwargs):
            picks = draw(*args, **kwargs)
            self.picks.setdefault(trainer.progress.step + 1, []).extend(picks)
            return picks

        sampler.next_rank_picks, sampler._recorded_by = recorded, self

    def all_ranks_picks(self) -> dict[int, list]:
        """step -> every rank's picks in rank order: the samples the whole group read at that step."""
        gathered = [self.picks]
        if dist.is_initialized():
            gathered = [None] * dist.get_world_size()
            dist.all_gather_object(gathered, self.picks)
        return {step: [p for rank in gathered for p in rank.get(step, [])] for step in sorted(self.picks)}

    def attach(self, trainer) -> None:
        """Record the picks of every draw: the trainer draws a step's rows before its hooks' `before_step`."""
        draw_rows = trainer.next_batch

        def next_batch():
            self._record_picks(trainer)
            return draw_rows()

        trainer.next_batch = next_batch
        trainer.hooks.append(self)

    def before_step(self, trainer) -> None:
        if self.start_step is not None:
            return
        self.start_step = trainer.progress.step
        if self.start_step > 0:
            mine = _optimizer_state_by_name(trainer)
            gathered = [mine]
            if dist.is_initialized():
                gathered = [None] * dist.get_world_size()
                dist.all_gather_object(gathered, mine)
            self.resumed_optim = dict(enumerate(gathered))

    def after_step(self, trainer, metrics) -> None:
        self.losses[trainer.progress.step] = metrics["loss"]
        if trainer.progress.step != self.snapshot_at:
            return
        if trainer.ctx.is_rank0:
            for snapshot in self.snapshots:
                shutil.copytree(trainer.checkpoints.root, snapshot)  # this step's save is committed


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser()
    parser.add_argument("--strategy", default="single")
    parser.add_argument("--zero1", action="store_true")
    parser.add_argument("--optimizer", default="muon")
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--precision", default="fp32")
    parser.add_argument("--global-batch", type=int, default=4)
    parser.add_argument("--micro-batch", type=int, default=2)
    parser.add_argument("--checkpoint-every", type=int, default=2)
    parser.add_argument("--snapshot-at", type=int, default=None)
    parser.add_argument("--snapshot", type=Path, action="append", default=[])
    parser.add_argument("--run-dir", type=Path, default=None)
    parser.add_argument("--seq-len", type=int, default=32)
    parser.add_argument("--activation-checkpointing", default="none")
    parser.add_argument("--context-parallel", type=int, default=1)  # train.distributed.context_parallel
    # a second phase of --long-steps steps at twice the sequence length, with its own context_parallel
    parser.add_argument("--long-steps", type=int, default=0)
    parser.add_argument("--long-cp", type=int, default=None)
    parser.add_argument("--cache", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    return parser


def run_job(args: argparse.Namespace) -> None:
    """One run: train, reload its last checkpoint in a fresh trainer, and (rank 0) write the results to --out."""
    sources = {
        "json": SourceConfig(path="stdlib", glob="json/*.py", exclude=[]),
        "email": SourceConfig(path="stdlib", glob="email/*.py", exclude=[]),
    }
    train = TrainConfig(
        global_batch_size=args.global_batch,
        micro_batch_size=args.micro_batch,
        max_steps=args.steps,
        precision=args.precision,
        activation_checkpointing=args.activation_checkpointing,
        plots=False,
        data=DataConfig(sources=sources, val_fraction=0.2),
        distributed=DistributedConfig(strategy=args.strategy, zero1=args.zero1, context_parallel=args.context_parallel),
        checkpoint=CheckpointConfig(enabled=True, every_steps=args.checkpoint_every),
        eval=EvalConfig(every_steps=1000, sequences=4, sample_tokens=0),
    )
    train.optimizer.name = args.optimizer
    phases = [
        PhaseConfig(
            name="p0",
            tokens=10**6 if not args.long_steps else (args.steps - args.long_steps) * args.global_batch * args.seq_len,
            seq_len=args.seq_len,
            mixture={"json": 1.0, "email": 1.0},
            schedule=ScheduleConfig(peak_lr=1e-2, warmup_fraction=0.0),
        )
    ]
    if args.long_steps:
        phases.append(
            PhaseConfig(
                name="long",
                tokens=10**6,
                seq_len=2 * args.seq_len,
                rope_theta=1e5,
                mixture={"email": 1.0},
                schedule=ScheduleConfig(kind="constant", peak_lr=5e-3, warmup_fraction=0.0),
                context_parallel=args.long_cp,
            )
        )
    recipe = RecipeConfig(phases=phases)
    run_dir = args.run_dir or args.out.parent / f"run-{args.out.stem}"
    groups = {"model": ZayaConfig.from_preset("zaya1-tiny"), "train": train, "recipe": recipe}
    trainer = build_trainer(groups, run_dir, cache_dir=args.cache)
    trainer.log_every = 1
    trainer.show_progress = False
    recorder = Recorder(args.snapshot_at, args.snapshot)
    recorder.attach(trainer)
    summary = trainer.run()
    picks = recorder.all_ranks_picks()
    full = _full_weights(trainer)
    trainer.close()
    # A fresh trainer on the same run dir resumes this strategy's sharded checkpoint of the last step.
    again = build_trainer(groups, run_dir, cache_dir=args.cache)
    resumed_step = again.progress.step if again.resume() else None
    reloaded = _full_weights(again)
    again.close()
    resume_exact = all(torch.equal(full[k], reloaded[k]) for k in full)
    if trainer.ctx.is_rank0:
        records = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
        losses = [r["loss"] for r in records if r["kind"] == "train"]
        phases = [
            (r["name"], r["step"], r["context_parallel"]) for r in records if r["kind"] == "phase" and not r["resumed"]
        ]
        torch.save(
            {
                "losses": losses,
                "phases": phases,
                "val": summary["final_val_loss"],
                "resumed_step": resumed_step,
                "resume_exact": resume_exact,
                "weights": full,
                "start_step": recorder.start_step,
                "step_losses": recorder.losses,
                "resumed_optim": recorder.resumed_optim,
                "picks": picks,
            },
            args.out,
        )


def main() -> None:
    parser = _parser()
    argv = sys.argv[1:]
    jobs = json.loads(Path(argv[1]).read_text()) if argv[:1] == ["--jobs"] else [argv]
    for job in jobs:
        run_job(parser.parse_args(job))
    if dist.is_initialized():
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
