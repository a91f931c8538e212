"""Training-step time with and without `train.data.document_masking`, on this machine's CPU.

A real Trainer (zaya1-tiny, byte tokenizer, one CPU thread, fp32; data: the standard library's `json` and
`email` sources cut into documents of 50 to 400 characters, so a window packs several) runs the same sampled
batches through `Trainer.train_step` twice: unmasked, and with the batches' document ids (masked attention,
conv taps and delayed value; restarted positions). The two kinds of step alternate, so a change in the
machine's load hits both alike; the median of each is reported.

    python packages/zaya-train/benchmarks/document_masking.py --out /tmp/docmask

Writes results.json under --out (`{"meta", "rows"}`); `--smoke` takes a few short steps (tested).
"""

import argparse
import json
import random
import statistics
import subprocess
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import torch
from rich.progress import Progress
from zaya_config.atomic import write_text_atomic

REPO = Path(__file__).resolve().parents[3]
PACKAGES = ("json", "email")


def cut_documents(package: str, folder: Path) -> Path:
    """The stdlib package's sources cut into documents of 50 to 400 characters (seeded), one file each."""
    from zaya_train.data.corpus import stdlib_root

    rng = random.Random(0)
    folder.mkdir(parents=True)
    count = 0
    for path in sorted((stdlib_root() / package).glob("*.py")):
        text = path.read_text(encoding="utf-8")
        while text:
            n = rng.randint(50, 400)
            (folder / f"{count:05d}.txt").write_text(text[:n], encoding="utf-8")
            text, count = text[n:], count + 1
    return folder


def build(work: Path, seq_len: int, batch: int):
    """A Trainer with document masking on (the unmasked step is the same trainer's step without documents)."""
    from zaya_config import hardware
    from zaya_model import ZayaConfig
    from zaya_train.build import build_trainer
    from zaya_train.config import CheckpointConfig, DataConfig, EvalConfig, SourceConfig, TrainConfig
    from zaya_train.recipe import PhaseConfig, RecipeConfig, ScheduleConfig

    sources = {name: SourceConfig(path=str(cut_documents(name, work / name)), glob="*.txt") for name in PACKAGES}
    train = TrainConfig(global_batch_size=batch, micro_batch_size=batch, device="cpu", cpu_threads=1, plots=False,
                        data=DataConfig(sources=sources, val_fraction=0.2, document_masking=True),
                        checkpoint=CheckpointConfig(enabled=False),
                        eval=EvalConfig(every_steps=10**6, sequences=2, sample_tokens=0))  # fmt: skip
    phase = PhaseConfig(name="p0", tokens=10**8, seq_len=seq_len, mixture={"json": 1.0, "email": 1.0},
                        schedule=ScheduleConfig(kind="constant", peak_lr=1e-3, warmup_fraction=0.0))  # fmt: skip
    groups = {"model": ZayaConfig.from_preset("zaya1-tiny"), "train": train,
              "recipe": RecipeConfig(name="docmask", phases=[phase]), "hardware": hardware("cpu")}  # fmt: skip
    trainer = build_trainer(groups, work / "run", cache_dir=work / "cache")
    trainer.show_progress = False
    trainer.enter_phase(0)
    return trainer


def measure(seq_len: int, batch: int, steps: int, warmup: int) -> dict:
    """Median step time (ms) of each kind over `steps` alternating pairs of steps."""
    times: dict[str, list[float]] = {"unmasked": [], "masked": []}
    with tempfile.TemporaryDirectory() as tmp:
        trainer = build(Path(tmp), seq_len, batch)
        try:
            with Progress(transient=True) as bar:
                task = bar.add_task(f"seq {seq_len} x batch {batch}", total=warmup + steps)
                documents_per_window = []
                for i in range(warmup + steps):
                    tokens, documents = trainer.next_batch()
                    documents_per_window += [len(set(row.tolist())) for row in documents]
                    for kind, docs in (("unmasked", None), ("masked", documents)):
                        started = time.perf_counter()
                        trainer.train_step(tokens, docs)
                        if i >= warmup:
                            times[kind].append((time.perf_counter() - started) * 1e3)
                    bar.advance(task)
        finally:
            trainer.close()
    row = {"seq_len": seq_len, "batch": batch, "steps": steps,
           "documents_per_window": round(statistics.mean(documents_per_window), 2)}  # fmt: skip
    for kind, values in times.items():
        row[f"{kind}_step_ms"] = statistics.median(values)
    row["masked_over_unmasked"] = row["masked_step_ms"] / row["unmasked_step_ms"]
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--seq-lens", type=int, nargs="+", default=[128, 256])
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--smoke", action="store_true", help="two short steps (a check, not a measurement)")
    args = parser.parse_args()
    torch.manual_seed(0)
    seq_lens, steps, warmup = ([32], 2, 1) if args.smoke else (args.seq_lens, args.steps, 3)
    commit = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    meta = {"date": datetime.now(UTC).isoformat(timespec="seconds"), "commit": commit.stdout.strip(),
            "torch": torch.__version__, "threads": 1, "smoke": args.smoke}  # fmt: skip
    rows = [measure(seq_len, args.batch, steps, warmup) for seq_len in seq_lens]
    args.out.mkdir(parents=True, exist_ok=True)
    write_text_atomic(args.out / "results.json", json.dumps({"meta": meta, "rows": rows}, indent=1))
    for row in rows:
        print(json.dumps(row))


if __name__ == "__main__":
    main()
