"""One of three processes of test_ckpt_reshape_train_resume.py: a real zaya-train run (zaya1-tiny, FSDP2 or
DDP + ZeRO-1, gloo) on 2 ranks, reshaped by `zaya ckpt convert`, resumed on 3 ranks, for each strategy of
--strategies in turn (in --work/<strategy>; the tokenized data cache in --work/cache is shared).

The test sets torchrun's variables (RANK, MASTER_ADDR) by hand and this script forms two real process
groups per strategy one after the other, so each process imports torch once, not once per world size and
strategy:
1. ranks 0 and 1 (world 2, the strategy's first port) train 5 steps; after step 3 rank 0 copies the
   committed checkpoint root (a zaya-train root of step 3) and training goes on, which gives the reference
   losses of steps 4-5; rank 2 meanwhile waits in the second group's rendezvous;
2. rank 0 runs the `zaya ckpt convert` command (ckpt_reshape's typer app) on the copy to dp=3 (with FSDP for
   an FSDP2 run; replicated for ZeRO-1, whose optimizer state zaya-train saves by parameter name, as DDP);
3. all three (world 3, its second port) resume from the converted root and train to step 5.
Rank 0 writes <strategy>/result.pt: per phase the step it started from, the full weights then, and every
step's loss.
"""

import argparse
import os
import shutil
from pathlib import Path

import torch
import torch.distributed as dist
from torch.distributed.checkpoint.state_dict import StateDictOptions, get_model_state_dict
from zaya_model import ZayaConfig
from zaya_train.build import build_trainer
from zaya_train.config import CheckpointConfig, DataConfig, DistributedConfig, EvalConfig, SourceConfig, TrainConfig
from zaya_train.hooks import TrainerHook
from zaya_train.recipe import PhaseConfig, RecipeConfig, ScheduleConfig

STEPS, SNAPSHOT_AT = 5, 3
STRATEGIES = {  # --strategy: zaya-train's distributed config, the layout the checkpoint is converted to
    "fsdp": (DistributedConfig(strategy="fsdp", timeout_s=300), "dp=3,fsdp=1"),
    "zero1": (DistributedConfig(strategy="ddp", zero1=True, timeout_s=300), "dp=3"),
}


class Recorder(TrainerHook):
    """Trainer hook: the weights (and, under ZeRO-1, every rank's optimizer state by parameter name) at the
    first step this process runs, each step's loss, the snapshot copy."""

    def __init__(self, snapshot_dir: Path | None) -> None:
        self.snapshot_dir = snapshot_dir
        self.start_step: int | None = None
        self.start_weights: dict[str, torch.Tensor] = {}
        self.start_optim: list[dict] = []  # per rank: {fqn: {name: tensor}} of its ZeRO-1 local optimizer
        self.losses: dict[int, float] = {}

    def before_step(self, trainer) -> None:
        if self.start_step is None:  # every rank takes part: gathering FSDP2 shards is a collective
            self.start_step = trainer.progress.step
            full = get_model_state_dict(trainer.model, options=StateDictOptions(full_state_dict=True, cpu_offload=True))
            self.start_weights = {k: v.detach().clone() for k, v in full.items()}
            if trainer.zero1:
                from zaya_train.optim.zero1_state import parameter_names

                names = parameter_names(trainer.model)
                state = trainer.optimizer.optim.state
                mine = {names[p]: {k: v.detach().clone() for k, v in entry.items()} for p, entry in state.items()}
                self.start_optim = [None] * dist.get_world_size()
                dist.all_gather_object(self.start_optim, mine)

    def after_step(self, trainer, metrics) -> None:
        self.losses[trainer.progress.step] = metrics["loss"]
        if trainer.progress.step == SNAPSHOT_AT and self.snapshot_dir is not None and trainer.ctx.is_rank0:
            shutil.copytree(trainer.checkpoints.root, self.snapshot_dir)  # this step's save is committed


def train(run_dir: Path, cache: Path, world: int, port: str, snapshot_dir: Path | None, strategy: str) -> dict:
    """Join a `world`-rank group, train (resuming from run_dir's checkpoints if any) to STEPS, leave the group."""
    os.environ.update(WORLD_SIZE=str(world), LOCAL_WORLD_SIZE=str(world), MASTER_PORT=port)
    sources = {
        "json": SourceConfig(path="stdlib", glob="json/*.py", exclude=[]),
        "email": SourceConfig(path="stdlib", glob="email/*.py", exclude=[]),
    }
    cfg = TrainConfig(
        global_batch_size=6,  # splits over 2 and over 3 ranks: the same global batch on either world
        micro_batch_size=1,
        max_steps=STEPS,
        plots=False,
        cpu_threads=1,
        data=DataConfig(sources=sources, val_fraction=0.2),
        distributed=STRATEGIES[strategy][0],
        checkpoint=CheckpointConfig(enabled=True, every_steps=SNAPSHOT_AT, keep_last=3),
        eval=EvalConfig(every_steps=1000, sequences=1, sample_tokens=0),
    )
    phase = PhaseConfig(
        name="p0",
        tokens=10**6,
        seq_len=32,
        mixture={"json": 1.0, "email": 1.0},
        schedule=ScheduleConfig(peak_lr=1e-2, warmup_fraction=0.0),
    )
    groups = {"model": ZayaConfig.from_preset("zaya1-tiny"), "train": cfg, "recipe": RecipeConfig(phases=[phase])}
    trainer = build_trainer(groups, run_dir, cache_dir=cache)
    trainer.show_progress = False
    recorder = Recorder(snapshot_dir)
    trainer.hooks.append(recorder)
    summary = trainer.run()
    trainer.close()
    trainer.ctx.close()
    return {
        "world_size": world,
        "start_step": recorder.start_step,
        "start_weights": recorder.start_weights,
        "start_optim": recorder.start_optim,
        "losses": recorder.losses,
        "final_step": summary["steps"],
    }


def convert_snapshot(snapshot: Path, dst: Path, layout: str) -> str:
    """`zaya ckpt convert SNAPSHOT DST --to dcp --layout LAYOUT`, through the command's own typer app."""
    from ckpt_reshape.cli import app
    from typer.testing import CliRunner

    done = CliRunner().invoke(app, ["convert", str(snapshot), str(dst), "--to", "dcp", "--layout", layout, "--quiet"])
    if done.exit_code != 0:
        raise SystemExit(f"zaya ckpt convert failed ({done.exit_code}): {done.output}")
    return done.output


def run_strategy(work: Path, cache: Path, rank: int, port_a: str, port_b: str, strategy: str) -> None:
    """Phases 1-3 of one strategy in `work`."""
    snapshot = work / "snapshot"
    result: dict = {}
    if rank < 2:
        result["before"] = train(work / "run2", cache, 2, port_a, snapshot, strategy)
        if rank == 0:
            (work / "run3").mkdir()
            layout = STRATEGIES[strategy][1]
            result["convert_output"] = convert_snapshot(snapshot, work / "run3" / "checkpoints", layout)
    result["after"] = train(work / "run3", cache, 3, port_b, None, strategy)
    if rank == 0:
        torch.save(result, work / "result.pt")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--work", type=Path, required=True)
    parser.add_argument("--ports", required=True, help="two free ports per strategy: its 2-rank and 3-rank group's")
    parser.add_argument("--strategies", default="fsdp", help=f"comma-separated, of {sorted(STRATEGIES)}")
    args = parser.parse_args()
    rank, ports, strategies = int(os.environ["RANK"]), args.ports.split(","), args.strategies.split(",")
    if len(ports) != 2 * len(strategies) or not set(strategies) <= set(STRATEGIES):
        raise SystemExit(f"--strategies {args.strategies!r} (of {sorted(STRATEGIES)}) needs 2 ports each")
    for i, strategy in enumerate(strategies):
        (args.work / strategy).mkdir(parents=True, exist_ok=True)
        run_strategy(args.work / strategy, args.work / "cache", rank, ports[2 * i], ports[2 * i + 1], strategy)
    if dist.is_initialized():
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
