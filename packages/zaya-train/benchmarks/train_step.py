"""Training-step throughput and MFU of zaya-train's step on one GPU: zaya1-base width, 4 layers, bf16
autocast with fp32 master weights, AdamW vs Muon (Newton-Schulz cost included), and the optimizer step
alone. Run on an H200:

    PYTHONPATH=$(ls -d packages/*/src | tr '\n' :) python3 packages/zaya-train/benchmarks/train_step.py --out $OUT

`--smoke` runs tiny sizes on CPU (tested in CI). Imports only torch, numpy, matplotlib and our packages'
torch-only modules (no hydra/omegaconf/zarr). Writes results.json, results.csv and throughput.png.
"""

import argparse
import csv
import json
import re
import time
from pathlib import Path
from types import SimpleNamespace

import torch
import torch.nn.functional as F

H200_YAML = Path(__file__).resolve().parents[2] / "zaya-config/src/zaya_config/conf/hardware/h200.yaml"


def peak_bf16_flops() -> float:
    """H200 dense bf16 peak from zaya-config's datasheet profile (read as text: no omegaconf needed)."""
    match = re.search(r"^peak_bf16_flops:\s*([0-9.eE+]+)", H200_YAML.read_text(), re.M)
    return float(match.group(1)) if match else 989.5e12


def optimizer_cfg(name: str) -> SimpleNamespace:
    """The fields of zaya_train.config.OptimizerConfig the optimizer builder reads."""
    return SimpleNamespace(
        name=name,
        betas=(0.9, 0.95),
        eps=1e-8,
        weight_decay=0.1,
        decay_embeddings=False,
        momentum=0.95,
        nesterov=True,
        ns_steps=5,
        rms_scale=0.2,
    )


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize()


def bench(
    model_cfg, optimizer: str, batch: int, seq_len: int, steps: int, warmup: int, device: torch.device, precision: str
) -> dict:
    from zaya_model import build_model, flops_per_token
    from zaya_train.optim import build_optimizer

    torch.manual_seed(0)
    model = build_model(model_cfg).to(device)
    opt = build_optimizer(model, optimizer_cfg(optimizer))
    for group in opt.param_groups:
        group["lr"] = 1e-4
    tokens = torch.randint(0, model_cfg.vocab_size, (batch, seq_len + 1), device=device)
    autocast = torch.autocast(device.type, dtype=torch.bfloat16, enabled=precision == "bf16")

    def step() -> float:
        opt.zero_grad(set_to_none=True)
        with autocast:
            logits = model(tokens[:, :-1])
        loss = F.cross_entropy(logits.float().reshape(-1, logits.size(-1)), tokens[:, 1:].reshape(-1))
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        t0 = time.perf_counter()
        opt.step()
        model.update_router_biases()
        sync(device)
        return time.perf_counter() - t0

    for _ in range(warmup):
        step()
    sync(device)
    start = time.perf_counter()
    opt_times = [step() for _ in range(steps)]
    sync(device)
    elapsed = (time.perf_counter() - start) / steps
    tps = batch * seq_len / elapsed
    fpt = flops_per_token(model_cfg, seq_len, training=True)
    peak = peak_bf16_flops() if device.type == "cuda" else float("nan")
    if device.type == "cuda":
        torch.cuda.empty_cache()
    return {
        "optimizer": optimizer,
        "batch": batch,
        "seq_len": seq_len,
        "step_ms": elapsed * 1e3,
        "optimizer_step_ms": 1e3 * sum(opt_times) / len(opt_times),
        "tokens_per_s": tps,
        "model_tflops_per_s": tps * fpt / 1e12,
        "mfu": tps * fpt / peak,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--smoke", action="store_true", help="tiny sizes on CPU")
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--seq-len", type=int, default=4096)
    parser.add_argument("--batch", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--steps", type=int, default=10)
    args = parser.parse_args()
    from zaya_model import ZayaConfig

    args.out.mkdir(parents=True, exist_ok=True)
    if args.smoke:
        device, precision = torch.device("cpu"), "fp32"
        model_cfg = ZayaConfig.from_preset("zaya1-tiny")
        batches, seq_len, steps, warmup = [2], 64, 2, 1
    else:
        if not torch.cuda.is_available():
            raise SystemExit("no CUDA device: run with --smoke on CPU")
        device, precision = torch.device("cuda"), "bf16"
        model_cfg = ZayaConfig.from_preset("zaya1-base", num_hidden_layers=args.layers)
        batches, seq_len, steps, warmup = args.batch, args.seq_len, args.steps, 3
    rows = []
    for batch in batches:
        for optimizer in ("adamw", "muon"):
            try:
                rows.append(bench(model_cfg, optimizer, batch, seq_len, steps, warmup, device, precision))
            except torch.OutOfMemoryError:
                rows.append({"optimizer": optimizer, "batch": batch, "seq_len": seq_len, "error": "out of memory"})
                torch.cuda.empty_cache()
    meta = {
        "device": torch.cuda.get_device_name() if device.type == "cuda" else "cpu",
        "torch": torch.__version__,
        "precision": precision,
        "layers": model_cfg.num_hidden_layers,
        "hidden": model_cfg.hidden_size,
        "experts": model_cfg.num_experts,
        "smoke": args.smoke,
    }
    (args.out / "results.json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=2))
    keys = [
        "optimizer",
        "batch",
        "seq_len",
        "step_ms",
        "optimizer_step_ms",
        "tokens_per_s",
        "model_tflops_per_s",
        "mfu",
        "error",
    ]
    with open(args.out / "results.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=keys)
        writer.writeheader()
        writer.writerows(rows)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    for optimizer in ("adamw", "muon"):
        ok = [r for r in rows if r["optimizer"] == optimizer and "error" not in r]
        ax.plot([r["batch"] for r in ok], [r["tokens_per_s"] for r in ok], "o-", label=optimizer)
    ax.set_xlabel("micro-batch (sequences)")
    ax.set_ylabel("training tokens/s")
    ax.set_title(f"zaya-train step, {meta['layers']} layers x {meta['hidden']}, {meta['device']}")
    ax.legend()
    fig.savefig(args.out / "throughput.png", dpi=110, bbox_inches="tight")
    print(
        f"{'optimizer':>9} {'batch':>5} {'seq':>6} {'step ms':>9} {'opt ms':>8} {'tok/s':>10} {'TFLOP/s':>8} {'MFU':>6}"
    )
    for r in rows:
        if "error" in r:
            print(f"{r['optimizer']:>9} {r['batch']:>5} {r['seq_len']:>6}  {r['error']}")
            continue
        print(
            f"{r['optimizer']:>9} {r['batch']:>5} {r['seq_len']:>6} {r['step_ms']:>9.1f} {r['optimizer_step_ms']:>8.1f} "
            f"{r['tokens_per_s']:>10.0f} {r['model_tflops_per_s']:>8.1f} {r['mfu']:>6.3f}"
        )


if __name__ == "__main__":
    main()
