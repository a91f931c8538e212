"""Training-step and decode throughput of zaya_model vs transformers' ZayaForCausalLM on the same weights.

    PYTHONPATH=packages/zaya-model/src python3 packages/zaya-model/benchmarks/bench_model.py --out $OUT
    python3 packages/zaya-model/benchmarks/bench_model.py --smoke --out /tmp/bench   # CPU, tiny, seconds

Model: zaya1-base width (D 2048, 8/2 heads of 128, 16 experts of 2048, vocab 262272) with 4 layers, bf16
weights on both sides (the same tensors, copied through `to_hf_state_dict`). Training step = forward +
next-token loss + backward (no optimizer; same for both). Decode = batch 1, one token per step after a
prefill, with each side's own cache. MFU uses `zaya_model.flops_per_token(cfg, seq, training=True)`.
Writes bench_model.json and bench_model.png under --out; prints a table. Needs only torch (+ transformers
with `zaya` for the HF rows, which are skipped when it is missing).
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections.abc import Callable
from pathlib import Path

import torch
import torch.nn.functional as F
from zaya_config.atomic import write_text_atomic
from zaya_model import ZayaConfig, build_model, count_parameters, flops_per_token, to_hf_state_dict


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def timed(fn: Callable[[], None], steps: int, warmup: int, device: torch.device) -> float:
    """Seconds per call after warmup (the warmup also absorbs torch.compile)."""
    for _ in range(warmup):
        fn()
    _sync(device)
    start = time.perf_counter()
    for _ in range(steps):
        fn()
    _sync(device)
    return (time.perf_counter() - start) / steps


def _peak_memory_gib(device: torch.device) -> float | None:
    return torch.cuda.max_memory_allocated(device) / 2**30 if device.type == "cuda" else None


def _reset_memory(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats(device)


def load_hf_twin(ours: torch.nn.Module, dtype: torch.dtype, device: torch.device):
    """transformers' ZayaForCausalLM holding our weights, or (None, reason)."""
    try:
        from transformers.models.zaya import ZayaConfig as HFConfig
        from transformers.models.zaya import ZayaForCausalLM as HFModel
    except ImportError as err:
        return None, f"transformers with zaya not importable: {err}"
    hf_cfg = HFConfig(**ours.config.to_hf_config())
    with torch.device(device):
        hf = HFModel(hf_cfg).to(dtype)
    hf.load_state_dict(to_hf_state_dict(ours), strict=True)
    return hf, None


def train_step_fn(kind: str, model, ids: torch.Tensor, labels: torch.Tensor) -> Callable[[], None]:
    """One forward + loss + backward; `kind` picks the API each side would use in a trainer."""

    def step() -> None:
        model.zero_grad(set_to_none=True)
        if kind == "hf":
            loss = model(input_ids=ids, labels=ids, use_cache=False).loss  # HF shifts the labels itself
        elif kind == "ours-logits":
            logits = model(ids[:, :-1])
            loss = F.cross_entropy(logits.flatten(0, 1), labels.flatten())
        else:
            loss = model.loss(ids[:, :-1], labels)
        loss.backward()

    return step


def decode_fn(kind: str, model, prompt: torch.Tensor, new_tokens: int) -> Callable[[], None]:
    """Prefill then `new_tokens` greedy single-token steps; only the steps are what we report."""

    def run() -> None:
        with torch.no_grad():
            if kind == "hf":
                from transformers import DynamicCache

                cache = DynamicCache(config=model.config)
                logits = model(prompt, cache=cache, use_cache=True).logits[:, -1]
                for _ in range(new_tokens):
                    token = logits.argmax(-1, keepdim=True)
                    logits = model(token, cache=cache, use_cache=True).logits[:, -1]
            else:
                cache = model.new_cache(prompt.shape[0], prompt.shape[1] + new_tokens + 1)
                logits = model(prompt, cache=cache)[:, -1]
                for _ in range(new_tokens):
                    token = logits.argmax(-1, keepdim=True)
                    logits = model(token, cache=cache)[:, -1]

    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=Path(os.environ.get("OUT", "bench_out")))
    parser.add_argument("--smoke", action="store_true", help="tiny config on CPU (checks the script, not speed)")
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--seq", type=int, default=2048)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--prompt", type=int, default=128)
    parser.add_argument("--decode-tokens", type=int, default=64)
    parser.add_argument("--peak-flops", type=float, default=989.5e12, help="bf16 dense peak (H200: 989.5e12)")
    parser.add_argument("--no-compile", action="store_true")
    parser.add_argument("--compile-backend", default="inductor", help="torch.compile backend (smoke: aot_eager)")
    parser.add_argument("--no-hf", action="store_true")
    args = parser.parse_args()

    device = torch.device("cuda" if torch.cuda.is_available() and not args.smoke else "cpu")
    dtype = torch.bfloat16 if device.type == "cuda" else torch.float32
    if args.smoke:
        cfg = ZayaConfig.from_preset("zaya1-tiny", num_hidden_layers=2, name="smoke")
        args.batch, args.seq, args.steps, args.warmup, args.prompt, args.decode_tokens = 2, 32, 1, 1, 8, 3
        args.compile_backend = "aot_eager"  # inductor's C++ build takes minutes on a small CPU
    else:
        cfg = ZayaConfig.from_preset("zaya1-base", num_hidden_layers=args.layers, name=f"zaya1-base-{args.layers}L")
    torch.manual_seed(0)
    ours = build_model(cfg).to(device=device, dtype=dtype)
    hf, hf_error = (None, "--no-hf") if args.no_hf else load_hf_twin(ours, dtype, device)
    gen = torch.Generator().manual_seed(0)
    ids = torch.randint(0, cfg.vocab_size, (args.batch, args.seq + 1), generator=gen).to(device)
    labels = ids[:, 1:]
    prompt = ids[:1, : args.prompt]
    tokens_per_step = args.batch * args.seq
    train_flops = flops_per_token(cfg, args.seq, training=True)

    results: dict[str, dict] = {}
    parity = None
    if hf is not None:
        ours.eval()
        hf.eval()
        with torch.no_grad():
            probe = ids[:1, :64]
            parity = float((ours(probe) - hf(probe).logits.float()).abs().max())

    def record(name: str, model, kind: str, decode: bool = True) -> None:
        _reset_memory(device)
        model.train()
        seconds = timed(train_step_fn(kind, model, ids, labels), args.steps, args.warmup, device)
        tok_s = tokens_per_step / seconds
        results[name] = {
            "train_step_s": seconds,
            "train_tokens_per_s": tok_s,
            "mfu": tok_s * train_flops / args.peak_flops,
            "peak_mem_gib": _peak_memory_gib(device),
        }
        model.zero_grad(set_to_none=True)
        results[name]["decode_tokens_per_s"] = None
        model.eval()
        if decode:
            dec_kind = "hf" if kind == "hf" else "ours"
            reps, warm = (1, 0) if args.smoke else (3, 1)
            full = timed(decode_fn(dec_kind, model, prompt, args.decode_tokens), reps, warm, device)
            prefill = timed(decode_fn(dec_kind, model, prompt, 0), reps, warm, device)
            results[name]["decode_tokens_per_s"] = args.decode_tokens / max(full - prefill, 1e-9)
        print(f"  {name}: {tok_s:,.0f} train tok/s, decode {results[name]['decode_tokens_per_s']} tok/s")

    print(f"device {device} dtype {dtype} config {cfg.name}: batch {args.batch} x seq {args.seq}")
    if hf is not None:
        hf_experts = getattr(hf.config, "_experts_implementation", None)
        print(f"  HF experts implementation: {hf_experts}, attention: {hf.config._attn_implementation}")
        record("hf", hf, "hf")
        del hf
    record("ours-eager", ours, "ours-logits")
    record("ours-eager-fused-loss", ours, "ours", decode=False)
    compile_error = None
    if not args.no_compile:
        try:
            ours.compile_blocks(backend=args.compile_backend)
            # decode is measured eager above: compiled blocks would re-specialise on every cache length
            record("ours-compiled", ours, "ours", decode=False)
        except Exception as err:  # a compile failure must not lose the eager numbers
            compile_error = f"{type(err).__name__}: {err}"[:500]
            print(f"  torch.compile failed: {compile_error}")

    best = max((r for n, r in results.items() if n.startswith("ours")), key=lambda r: r["train_tokens_per_s"])
    best_decode = results["ours-eager"]["decode_tokens_per_s"]
    hf_row = results.get("hf")
    summary = {
        "config": cfg.to_dict(),
        "device": str(device),
        "gpu": torch.cuda.get_device_name(device) if device.type == "cuda" else None,
        "torch": torch.__version__,
        "dtype": str(dtype),
        "batch": args.batch,
        "seq": args.seq,
        "train_flops_per_token": train_flops,
        "params": count_parameters(cfg).__dict__,
        "peak_flops": args.peak_flops,
        "results": results,
        "hf_error": hf_error,
        "compile_error": compile_error,
        "logits_max_abs_diff_vs_hf": parity,
        "train_speedup_vs_hf": best["train_tokens_per_s"] / hf_row["train_tokens_per_s"] if hf_row else None,
        "decode_speedup_vs_hf": best_decode / hf_row["decode_tokens_per_s"] if hf_row else None,
    }
    write_text_atomic(args.out / "bench_model.json", json.dumps(summary, indent=2, default=str))
    _plot(results, args.out / "bench_model.png")

    print(f"\n{'impl':<24}{'train tok/s':>14}{'MFU':>8}{'decode tok/s':>14}{'peak GiB':>10}")
    for name, r in results.items():
        mem = f"{r['peak_mem_gib']:.1f}" if r["peak_mem_gib"] is not None else "-"
        dec = f"{r['decode_tokens_per_s']:.1f}" if r["decode_tokens_per_s"] is not None else "-"
        print(f"{name:<24}{r['train_tokens_per_s']:>14,.0f}{r['mfu']:>8.1%}{dec:>14}{mem:>10}")
    if hf_row:
        print(
            f"train speedup vs HF: {summary['train_speedup_vs_hf']:.2f}x; decode: "
            f"{summary['decode_speedup_vs_hf']:.2f}x; logits max |diff| (bf16): {parity:.3g}"
        )


def _plot(results: dict[str, dict], path: Path) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return
    names = list(results)
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.5))
    for ax, key, title in (
        (axes[0], "train_tokens_per_s", "training step tokens/s"),
        (axes[1], "decode_tokens_per_s", "batch-1 decode tokens/s"),
    ):
        ax.bar(names, [results[n][key] or 0.0 for n in names], color=["#888" if n == "hf" else "#2a6" for n in names])
        ax.set_title(title)
        ax.tick_params(axis="x", rotation=30)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


if __name__ == "__main__":
    main()
