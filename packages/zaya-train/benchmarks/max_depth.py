"""The deepest zaya1-base (up to its 40 layers) that trains on one GPU at sequence 4096 through the `Trainer`
built from the service config (`train=h200`: compiled blocks, activation checkpointing, Muon): depths are tried
from the deepest down; the first that runs two real steps is reported with its tokens/s, MFU and peak memory.

    python3 packages/zaya-train/benchmarks/max_depth.py --data-dir data --out $OUT

Writes max_depth.json under --out (every depth tried, out-of-memory ones included).
"""

import argparse
import json
from pathlib import Path

import torch
from train_step import _free, build_trainer, time_trainer  # same folder


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--data-dir", type=Path, default=Path("data"))
    parser.add_argument("--depths", type=int, nargs="+", default=[40, 36, 32, 28, 24, 20, 16])
    parser.add_argument("--micro-batch", type=int, default=2)
    parser.add_argument("--global-batch", type=int, default=64)
    parser.add_argument("--activation-checkpointing", default="full", choices=["none", "selective", "full"])
    parser.add_argument("--optimizer", default="muon", choices=["adamw", "muon"])
    args = parser.parse_args()
    from zaya_train.metrics import mfu

    args.out.mkdir(parents=True, exist_ok=True)
    tried = []
    for layers in sorted(args.depths, reverse=True):
        row = {"layers": layers, "micro_batch": args.micro_batch, "global_batch": args.global_batch, "seq": 4096,
               "activation_checkpointing": args.activation_checkpointing, "optimizer": args.optimizer}  # fmt: skip
        trainer = None
        try:
            trainer = build_trainer(["model=zaya1-base", f"model.num_hidden_layers={layers}", "hardware=h200",
                                     "train=h200", "recipe=h200-stdlib", "recipe.phases.0.batch_ramp=null",
                                     f"recipe.phases.0.global_batch_size={args.global_batch}",
                                     f"train.global_batch_size={args.global_batch}",
                                     f"train.micro_batch_size={args.micro_batch}",
                                     f"train.optimizer.name={args.optimizer}",
                                     f"train.activation_checkpointing={args.activation_checkpointing}",
                                     f"paths.data_dir={args.data_dir.resolve()}"], args.out / "run")  # fmt: skip
            timing = time_trainer(trainer, steps=2, warmup=1)
            tps = timing["tokens_per_step"] / (timing["step_ms"] / 1e3)
            row.update(ok=True, tokens_per_s=tps, step_ms=timing["step_ms"], optimizer_ms=timing["optimizer_ms"],
                       mfu=mfu(tps, trainer.flops_per_token(4096), trainer.hardware, "bf16", 1),
                       peak_gib=torch.cuda.max_memory_allocated() / 2**30,
                       sm_clock_mhz=timing["sm_clock_mhz"], power_w=timing["power_w"])  # fmt: skip
        except torch.OutOfMemoryError:
            row.update(ok=False, error="out of memory")
        finally:
            if trainer is not None:
                trainer.close()
            del trainer
            _free(torch.device("cuda"))
        tried.append(row)
        print(json.dumps(row), flush=True)
        (args.out / "max_depth.json").write_text(json.dumps({"tried": tried}, indent=2) + "\n")
        if row["ok"]:
            break


if __name__ == "__main__":
    main()
