"""Training-step throughput and MFU of zaya-train's own `Trainer`, built from the config users run (the
`pretrain` service's, composed by Hydra with `hardware=h200 train=h200`), beside the model's own compiled
forward+backward in the same process. zaya1-base width (D 2048, 16 experts of 2048, vocab 262272), 8 layers,
sequence 4096, bf16 autocast with fp32 master weights, AdamW and Muon, micro-batches 1 to 8 under a global batch
of 64 sequences (gradient accumulation). Every timed step is `sampler.next_batch` + `Trainer.train_step`, as
`Trainer.run` does; the optimizer's share comes from the trainer's own step timer (CUDA events). The SM clock
and board power are sampled (NVML) during each row's timed steps.

On an H200 (the wheels for hydra/omegaconf/zarr carried as zaya-train's BENCHMARKS.md says):

    python3 packages/zaya-train/benchmarks/train_step.py --data-dir data --out $OUT

`--data-dir` holds `stdlib.zarr` + `stdlib.tokenizer.json` from `zaya data prepare` (train=h200's data);
`--smoke` runs zaya1-tiny on this machine's CPU with the standard library as data (tested in CI).
Writes results.json (`{"meta", "rows"}`), results.csv and throughput.png under --out, one row at a time.
"""

import argparse
import csv
import itertools
import json
import statistics
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import torch

REPO = Path(__file__).resolve().parents[3]
SERVICE_CONF = REPO / "services" / "pretrain" / "conf"
ROW_KEYS = ["optimizer", "micro_batch", "global_batch", "layers", "seq", "tokens_per_s", "mfu", "step_ms",
            "optimizer_ms", "sm_clock_mhz", "power_w", "peak_gib", "activation_checkpointing",
            "model_fwd_bwd_tokens_per_s", "trainer_over_model", "path", "error"]  # fmt: skip


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def compose_service(overrides: list[str]):
    """The `pretrain` service's config with `overrides`, resolved, as `zaya run pretrain` composes it."""
    from hydra import compose, initialize_config_dir
    from omegaconf import OmegaConf

    with initialize_config_dir(config_dir=str(SERVICE_CONF), version_base="1.3"):
        cfg = compose(config_name="pretrain", overrides=overrides)
    OmegaConf.resolve(cfg)
    return cfg


class ClockSampler:
    """SM clock (MHz) and board power (W) of GPU 0, sampled by NVML every 100 ms while running."""

    def __init__(self) -> None:
        self.clocks: list[float] = []
        self.power: list[float] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        try:
            import pynvml

            pynvml.nvmlInit()
            self._nvml, self._handle = pynvml, pynvml.nvmlDeviceGetHandleByIndex(0)
        except Exception:  # no NVML (CPU smoke): nothing is sampled, the row says null
            self._nvml = None

    def __enter__(self) -> "ClockSampler":
        if self._nvml is not None:
            self._thread = threading.Thread(target=self._run, daemon=True)
            self._thread.start()
        return self

    def _run(self) -> None:
        nvml = self._nvml
        while not self._stop.is_set():
            self.clocks.append(nvml.nvmlDeviceGetClockInfo(self._handle, nvml.NVML_CLOCK_SM))
            self.power.append(nvml.nvmlDeviceGetPowerUsage(self._handle) / 1000.0)
            self._stop.wait(0.1)

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()

    def median(self, values: list[float]) -> float | None:
        return statistics.median(values) if values else None


def build_trainer(overrides: list[str], run_dir: Path):
    """A Trainer from the service config, as `zaya run pretrain` builds it (no checkpoints, no plots)."""
    from zaya_train.build import build_trainer as build

    cfg = compose_service([*overrides, "train.checkpoint.enabled=false", "train.plots=false", "logging.progress=false"])
    trainer = build(cfg, run_dir)
    trainer._enter_next()
    trainer.log_every = 1  # every step reports its optimizer time (events read after the step)
    return trainer


def time_trainer(trainer, steps: int, warmup: int) -> dict[str, Any]:
    """Median step and optimizer time of `steps` real steps (data draw + train_step) after `warmup` steps."""
    device = trainer.ctx.device
    for _ in range(warmup):
        trainer.train_step(trainer.sampler.next_batch(trainer.global_batch_size()))
    sync(device)
    step_ms, optimizer_ms = [], []
    with ClockSampler() as clocks:
        for _ in range(steps):
            start = time.perf_counter()
            metrics = trainer.train_step(trainer.sampler.next_batch(trainer.global_batch_size()))
            sync(device)
            step_ms.append((time.perf_counter() - start) * 1e3)
            optimizer_ms.append(metrics["optimizer_ms"])
    return {
        "step_ms": statistics.median(step_ms),
        "optimizer_ms": statistics.median(optimizer_ms),
        "tokens_per_step": metrics["tokens_in_step"],
        "sm_clock_mhz": clocks.median(clocks.clocks),
        "power_w": clocks.median(clocks.power),
    }


def model_fwd_bwd_tokens_per_s(model_cfg, micro_batch: int, seq: int, steps: int, device: torch.device) -> float:
    """zaya-model's own compiled forward + fused loss + backward (bf16 weights, as its BENCHMARKS.md measures)."""
    from zaya_model import build_model

    torch.manual_seed(0)
    dtype = torch.bfloat16 if device.type == "cuda" else torch.float32
    model = build_model(model_cfg).to(device=device, dtype=dtype).train()
    if device.type == "cuda":
        model.compile_blocks()
    ids = torch.randint(0, model_cfg.vocab_size, (micro_batch, seq + 1), device=device)

    def step() -> None:
        model.zero_grad(set_to_none=True)
        model(ids[:, :-1], labels=ids[:, 1:]).backward()

    for _ in range(3):
        step()
    sync(device)
    start = time.perf_counter()
    for _ in range(steps):
        step()
    sync(device)
    return micro_batch * seq * steps / (time.perf_counter() - start)


def _free(device: torch.device) -> None:
    import gc

    gc.collect()
    if device.type == "cuda":
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()


def run_row(args, optimizer: str, micro_batch: int, overrides: list[str], run_dir: Path) -> dict[str, Any]:
    from zaya_train.metrics import mfu

    row: dict[str, Any] = {"optimizer": optimizer, "micro_batch": micro_batch, "global_batch": args.global_batch,
                           "layers": args.layers, "seq": args.seq, "path": "Trainer",
                           "activation_checkpointing": args.activation_checkpointing}  # fmt: skip
    trainer = None
    # Each row compiles afresh, as a user's process would: otherwise dynamo sees the blocks' batch size change
    # between rows and recompiles them with a dynamic batch dimension (slower kernels than the static ones).
    torch._dynamo.reset()
    try:
        trainer = build_trainer(
            [*overrides, f"train.optimizer.name={optimizer}", f"train.micro_batch_size={micro_batch}"], run_dir
        )
        timing = time_trainer(trainer, args.steps, args.warmup)
        tps = timing.pop("tokens_per_step") / (timing["step_ms"] / 1e3)
        fpt = trainer.flops_per_token(args.seq)
        row.update(timing, tokens_per_s=tps, mfu=mfu(tps, fpt, trainer.hardware, "bf16", 1))
        if trainer.ctx.device.type == "cuda":
            row["peak_gib"] = torch.cuda.max_memory_allocated() / 2**30
        model_cfg = trainer.model.config
        device = trainer.ctx.device
        trainer.close()
        trainer = None
        _free(device)
        if args.model_micro_batch is None or micro_batch in args.model_micro_batch:
            model_tps = model_fwd_bwd_tokens_per_s(model_cfg, micro_batch, args.seq, 5, device)
            row.update(model_fwd_bwd_tokens_per_s=model_tps, trainer_over_model=tps / model_tps)
    except torch.OutOfMemoryError:
        row["error"] = "out of memory"
    finally:
        if trainer is not None:
            trainer.close()
        _free(torch.device("cuda" if torch.cuda.is_available() else "cpu"))
    return row


def write_results(out: Path, meta: dict, rows: list[dict]) -> None:
    """results.json, results.csv and throughput.png, rewritten after every row (a killed run keeps its rows)."""
    import io

    from zaya_config.atomic import write_text_atomic

    write_text_atomic(out / "results.json", json.dumps({"meta": meta, "rows": rows}, indent=2) + "\n")
    table = io.StringIO()
    writer = csv.DictWriter(table, fieldnames=ROW_KEYS, extrasaction="ignore")
    writer.writeheader()
    writer.writerows(rows)
    write_text_atomic(out / "results.csv", table.getvalue())
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.5, 4))
    lines = dict(zip(sorted({r["global_batch"] for r in rows}), itertools.cycle(["-", "--", ":", "-."])))
    for optimizer, marker in (("adamw", "o"), ("muon", "s")):
        for global_batch, line in lines.items():
            ok = sorted(
                (
                    r
                    for r in rows
                    if r["optimizer"] == optimizer and r["global_batch"] == global_batch and "error" not in r
                ),
                key=lambda r: r["micro_batch"],
            )
            if ok:
                ax.plot([r["micro_batch"] for r in ok], [100 * r["mfu"] for r in ok], marker + line,
                        label=f"Trainer, {optimizer}, global batch {global_batch}")  # fmt: skip
    timed = {r["micro_batch"]: r for r in rows if r.get("model_fwd_bwd_tokens_per_s") and r.get("mfu")}
    if timed:  # the model alone, once per micro-batch (the last row that timed it); a marker shows a lone point
        ok = [timed[mb] for mb in sorted(timed)]
        ax.plot([r["micro_batch"] for r in ok],
                [100 * r["mfu"] / r["tokens_per_s"] * r["model_fwd_bwd_tokens_per_s"] for r in ok], "k*--",
                label="model alone, compiled fwd+bwd")  # fmt: skip
    for target, name in ((45, "AdamW"), (42, "Muon")):  # issue 16's targets at a global batch >= 64 x 4096
        ax.axhline(target, color="grey", lw=0.8, ls=":")
        ax.annotate(f"{name} target {target}%", (0.01, target), xycoords=("axes fraction", "data"), fontsize=7,
                    color="grey", va="bottom")  # fmt: skip
    ax.set_xlabel("micro-batch (sequences)")
    ax.set_ylabel("MFU (%)")
    ax.set_xscale("log", base=2)
    ax.set_title(f"zaya-train step, {meta['layers']} layers x 2048, seq {meta['seq']}, {meta['device']}", fontsize=9)
    ax.legend(fontsize=8)
    fig.savefig(out / "throughput.png", dpi=110, bbox_inches="tight")
    plt.close(fig)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--data-dir", type=Path, default=Path("data"), help="stdlib.zarr + stdlib.tokenizer.json")
    parser.add_argument("--smoke", action="store_true", help="zaya1-tiny on CPU, stdlib data, seconds")
    parser.add_argument("--layers", type=int, default=8)
    parser.add_argument("--seq", type=int, default=4096)
    parser.add_argument("--global-batch", type=int, default=64)
    parser.add_argument("--micro-batch", type=int, nargs="+", default=[1, 2, 4, 8])
    parser.add_argument("--optimizer", nargs="+", default=["adamw", "muon"], choices=["adamw", "muon"])
    parser.add_argument("--activation-checkpointing", default="none", choices=["none", "selective", "full"])
    parser.add_argument("--model-micro-batch", type=int, nargs="*", default=None,
                        help="micro-batches at which the model alone is also timed (default: every one)")  # fmt: skip
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--warmup", type=int, default=2)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    if args.smoke:
        args.layers, args.seq, args.global_batch, args.micro_batch = 2, 64, 8, [2, 4]
        args.steps, args.warmup = 2, 1
        overrides = ["model=zaya1-tiny", "hardware=cpu", "train=tiny-cpu", "recipe=tiny-cpu",
                     "recipe.phases.0.seq_len=64", "train.global_batch_size=8"]  # fmt: skip
    else:
        if not torch.cuda.is_available():
            raise SystemExit("no CUDA device: run with --smoke on CPU")
        data = args.data_dir.resolve()
        overrides = ["model=zaya1-base", f"model.num_hidden_layers={args.layers}", "hardware=h200", "train=h200",
                     "recipe=h200-stdlib", f"recipe.phases.0.seq_len={args.seq}", "recipe.phases.0.batch_ramp=null",
                     f"recipe.phases.0.global_batch_size={args.global_batch}",
                     f"train.global_batch_size={args.global_batch}", f"paths.data_dir={data}",
                     f"train.activation_checkpointing={args.activation_checkpointing}"]  # fmt: skip
    meta = {
        "device": torch.cuda.get_device_name() if torch.cuda.is_available() and not args.smoke else "cpu",
        "torch": torch.__version__,
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "layers": args.layers,
        "seq": args.seq,
        "global_batch": args.global_batch,
        "steps": args.steps,
        "warmup": args.warmup,
        "smoke": args.smoke,
        "config": overrides,
    }
    rows: list[dict] = []
    for micro_batch in args.micro_batch:
        for optimizer in args.optimizer:
            rows.append(run_row(args, optimizer, micro_batch, overrides, args.out / "run"))
            write_results(args.out, meta, rows)
            r = rows[-1]
            print(json.dumps({k: r.get(k) for k in ROW_KEYS if k in r}), flush=True)
    print(f"{'opt':>5} {'mb':>3} {'gb':>4} {'tok/s':>9} {'MFU':>6} {'step ms':>8} {'opt ms':>7} {'model tok/s':>11} "
          f"{'ratio':>6} {'MHz':>5} {'W':>5} {'GiB':>5}")  # fmt: skip
    for r in rows:
        if "error" in r:
            print(f"{r['optimizer']:>5} {r['micro_batch']:>3} {r['global_batch']:>4}  {r['error']}")
            continue
        fmt = lambda v, spec: format(v, spec) if v is not None else "-"  # noqa: E731
        print(f"{r['optimizer']:>5} {r['micro_batch']:>3} {r['global_batch']:>4} {r['tokens_per_s']:>9.0f} "
              f"{100 * r['mfu']:>5.1f}% {r['step_ms']:>8.1f} {r['optimizer_ms']:>7.1f} "
              f"{fmt(r.get('model_fwd_bwd_tokens_per_s'), '>11.0f')} {fmt(r.get('trainer_over_model'), '>6.2f')} "
              f"{fmt(r['sm_clock_mhz'], '>5.0f')} {fmt(r['power_w'], '>5.0f')} {fmt(r.get('peak_gib'), '>5.1f')}")  # fmt: skip


if __name__ == "__main__":
    main()
