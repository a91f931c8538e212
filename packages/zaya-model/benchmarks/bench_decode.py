"""Decode speed of `ZayaDecoder` against the memory roofline and Hugging Face's `generate`, same weights.

    PYTHONPATH=packages/zaya-model/src:packages/zaya-config/src \
        python3 packages/zaya-model/benchmarks/bench_decode.py --out $OUT          # one H200, ~5-10 min
    python3 packages/zaya-model/benchmarks/bench_decode.py --smoke --out /tmp/bd    # CPU, tiny, a minute

Models: zaya1-base width (D 2048, 16 experts of 2048, vocab 262272) with 4 and 40 layers, random bf16
weights. Per (layers, batch, implementation): a random prompt of --prompt tokens, --warmup steps, then
--tokens timed steps (CUDA events, no host sync in between). Implementations:
- `triton-graph`: `ZayaDecoder(kernels="triton", compile=True)`: each layer as 7-8 fused Triton kernels
  (`zaya_model/decode/fused.py`), the embedding and head through inductor, one CUDA graph per step (GPU only);
- `compiled-graph`: `ZayaDecoder(compile=True)` (per-layer inductor) replayed from one CUDA graph per step;
- `graph`: the uncompiled step in one CUDA graph;
- `eager`: the uncompiled step issued op by op (batch 1 only; the launch-bound baseline);
- `hf-generate`: transformers' `ZayaForCausalLM.generate` (greedy, its default cache), batch 1, timed as
  (time for n + 1 new tokens - time for 1) / n.

Every row: ms_per_token (one step: each row's next token), tokens_per_s (batch / step time), bytes_per_token
(`zaya_model.decode_bytes_per_token` at the mean context of the timed steps: weights read once per step,
experts expected under uniform routing, KV and CCA state, shared by the batch), achieved_gbps (bytes per
step / step time) and roofline_fraction (achieved / the device-to-device copy bandwidth measured in this
run: 2 x bytes copied / time, the best of 5). Greedy tokens of each implementation are compared with the
eager step's (`greedy_equal_to_eager`, --check-tokens tokens). Writes decode.json ({"rows": [...], ...})
and decode.png under --out and prints the table; the issue's targets are checked in "targets".
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path
from typing import Any

import torch
from bench_model import load_hf_twin
from zaya_config.atomic import write_text_atomic
from zaya_model import ZayaConfig, ZayaDecoder, build_model, decode_bytes_per_token
from zaya_model.decode import fused as fused_layers

IMPLS = ("triton-graph", "compiled-graph", "graph", "eager")
TARGETS = {"roofline_batch1_4_layers": 0.5, "roofline_batch1_40_layers": 0.4, "speedup_vs_hf_batch1": 10.0}


def _elapsed_s(fn, device: torch.device) -> float:
    """Wall seconds of fn(), measured with CUDA events on a GPU."""
    if device.type == "cuda":
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda.synchronize(device)
        start.record()
        fn()
        end.record()
        end.synchronize()
        return start.elapsed_time(end) / 1e3
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def copy_bandwidth_gbps(device: torch.device, size_bytes: int) -> float:
    """Device-to-device copy bandwidth in GB/s (bytes read + bytes written per second), best of 5."""
    src = torch.empty(size_bytes, dtype=torch.uint8, device=device).fill_(1)
    dst = torch.empty_like(src)
    dst.copy_(src)
    best = min(_elapsed_s(lambda: dst.copy_(src), device) for _ in range(5))
    return 2 * size_bytes / best / 1e9


def _row(cfg: ZayaConfig, impl: str, batch: int, step_s: float, context: int, copy_gbps: float) -> dict[str, Any]:
    step_bytes = decode_bytes_per_token(cfg, context, batch_size=batch, dtype_bytes=2).total
    achieved = step_bytes / step_s / 1e9
    return {
        "impl": impl,
        "layers": cfg.num_hidden_layers,
        "batch": batch,
        "ms_per_token": step_s * 1e3,
        "tokens_per_s": batch / step_s,
        "bytes_per_token": step_bytes / batch,
        "achieved_gbps": achieved,
        "roofline_fraction": achieved / copy_gbps,
        "context_len": context,
    }


def time_decoder(decoder: ZayaDecoder, prompt: torch.Tensor, warmup: int, tokens: int) -> float:
    """Seconds per step over `tokens` steps after a prefill and `warmup` steps."""
    decoder.prefill(prompt)
    for _ in range(warmup):
        decoder.step()

    def run() -> None:
        for _ in range(tokens):
            decoder.step()

    return _elapsed_s(run, decoder.device) / tokens


def time_hf_generate(hf, prompt: torch.Tensor, tokens: int) -> tuple[float, torch.Tensor]:
    """(seconds per new token, the greedy tokens) of HF's generate at this prompt."""

    def gen(n: int) -> torch.Tensor:
        return hf.generate(prompt, max_new_tokens=n, min_new_tokens=n, do_sample=False, pad_token_id=0)

    gen(2)  # warm up
    out: list[torch.Tensor] = []
    t_one = _elapsed_s(lambda: gen(1), prompt.device)
    t_all = _elapsed_s(lambda: out.append(gen(tokens + 1)), prompt.device)
    return (t_all - t_one) / tokens, out[0][:, prompt.shape[1] :]


def seeded_model(cfg: ZayaConfig, device: torch.device | str, dtype: torch.dtype) -> torch.nn.Module:
    """cfg's model with random weights drawn from seed 0 (every decode benchmark reads the same weights), in
    dtype, in eval mode."""
    torch.manual_seed(0)
    with torch.device(device):
        model = build_model(cfg)
    return model.to(dtype).eval()


def bench_layers(cfg: ZayaConfig, args: argparse.Namespace, device, dtype, copy_gbps: float) -> dict[str, Any]:
    """All rows for one depth: every implementation and batch, HF at batch 1, greedy checks."""
    model = seeded_model(cfg, device, dtype)
    max_len = args.prompt + args.warmup + max(args.tokens, args.check_tokens) + 1
    context = args.prompt + args.warmup + args.tokens // 2
    gen = torch.Generator().manual_seed(1)
    rows, errors = [], {}
    compile_opts: dict[str, Any] = {"backend": "aot_eager"} if device.type == "cpu" else {}
    compile_opts.update(args.compile_options)
    on_gpu = device.type == "cuda"  # no CUDA graph on a CPU: the compiled row runs uncaptured there
    impls = {
        "triton-graph": dict(compile=compile_opts or True, cuda_graph=True, kernels="triton"),
        "compiled-graph": dict(compile=compile_opts or True, cuda_graph=on_gpu),
        "graph": dict(compile=False, cuda_graph=True),
        "eager": {},
    }
    if not on_gpu:
        impls.pop("graph")
        impls.pop("triton-graph")
    impls = {name: options for name, options in impls.items() if name in args.impls}
    for batch in args.batches:
        prompt = torch.randint(1, cfg.vocab_size, (batch, args.prompt), generator=gen).to(device)
        eager = ZayaDecoder(model, batch, max_len, cuda_graph=False)
        reference = eager.generate(prompt, args.check_tokens)[:, args.prompt :]
        for impl, options in impls.items():
            if impl == "eager" and batch != 1:
                continue
            try:
                decoder = eager if impl == "eager" else ZayaDecoder(model, batch, max_len, **options)
                step_s = time_decoder(decoder, prompt, args.warmup, args.tokens)
                row = _row(cfg, impl, batch, step_s, context, copy_gbps)
                row["greedy_equal_to_eager"] = bool(
                    torch.equal(decoder.generate(prompt, args.check_tokens)[:, args.prompt :], reference)
                )
                rows.append(row)
                print(
                    f"  L={cfg.num_hidden_layers:<3} B={batch:<3} {impl:<15} {row['ms_per_token']:8.3f} ms/token "
                    f"{row['tokens_per_s']:10.1f} tok/s {row['achieved_gbps']:8.1f} GB/s "
                    f"{row['roofline_fraction']:6.1%} of copy bw, greedy == eager: {row['greedy_equal_to_eager']}"
                )
                del decoder
            except Exception as err:  # one failing variant must not lose the others' numbers
                errors[f"{impl}/batch{batch}"] = f"{type(err).__name__}: {err}"[:800]
                print(f"  L={cfg.num_hidden_layers} B={batch} {impl}: FAILED {errors[f'{impl}/batch{batch}']}")
            if device.type == "cuda":
                torch.cuda.empty_cache()
        del eager
    hf_info: dict[str, Any] = {"error": "--no-hf"} if args.no_hf else {}
    if not args.no_hf:
        hf, hf_error = load_hf_twin(model, dtype, device)
        if hf is None:
            hf_info["error"] = hf_error
        else:
            prompt = torch.randint(1, cfg.vocab_size, (1, args.prompt), generator=gen).to(device)
            with torch.no_grad():
                seconds, hf_tokens = time_hf_generate(hf.eval(), prompt, args.hf_tokens)
            row = _row(cfg, "hf-generate", 1, seconds, args.prompt + args.hf_tokens // 2, copy_gbps)
            ours = ZayaDecoder(model, 1, args.prompt + args.hf_tokens + 1, cuda_graph=False)
            row["greedy_equal_to_eager"] = bool(
                torch.equal(ours.generate(prompt, args.hf_tokens)[:, args.prompt :], hf_tokens[:, : args.hf_tokens])
            )
            rows.append(row)
            print(
                f"  L={cfg.num_hidden_layers:<3} B=1   hf-generate     {row['ms_per_token']:8.3f} ms/token, "
                f"greedy == our eager: {row['greedy_equal_to_eager']}"
            )
            del hf
    del model
    if device.type == "cuda":
        torch.cuda.empty_cache()
    return {"rows": rows, "errors": errors, "hf": hf_info}


def check_targets(rows: list[dict[str, Any]], layers: list[int]) -> dict[str, Any]:
    """The issue's batch-1 targets from the best of our rows, where the rows exist."""

    def best(n_layers: int) -> dict[str, Any] | None:
        ours = [r for r in rows if r["layers"] == n_layers and r["batch"] == 1 and r["impl"] != "hf-generate"]
        return max(ours, key=lambda r: r["tokens_per_s"]) if ours else None

    out: dict[str, Any] = {}
    for n_layers, key in ((4, "roofline_batch1_4_layers"), (40, "roofline_batch1_40_layers")):
        row = best(n_layers) if n_layers in layers else None
        if row is not None:
            out[key] = {"value": row["roofline_fraction"], "target": TARGETS[key], "impl": row["impl"]}
            out[key]["met"] = row["roofline_fraction"] >= TARGETS[key]
    for n_layers in layers:
        hf = [r for r in rows if r["layers"] == n_layers and r["impl"] == "hf-generate"]
        row = best(n_layers)
        if hf and row:
            speedup = row["tokens_per_s"] / hf[0]["tokens_per_s"]
            target = TARGETS["speedup_vs_hf_batch1"]
            out[f"speedup_vs_hf_batch1_{n_layers}_layers"] = {
                "value": speedup,
                "target": target,
                "met": speedup >= target,
            }
    return out


def plot(rows: list[dict[str, Any]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    series = sorted({(r["layers"], r["impl"]) for r in rows})
    for i, (n_layers, impl) in enumerate(series):
        pts = sorted((r["batch"], r) for r in rows if r["layers"] == n_layers and r["impl"] == impl)
        batches = [b for b, _ in pts]
        style = dict(marker="o", color=f"C{i}", label=f"{n_layers} layers, {impl}")
        axes[0].plot(batches, [r["roofline_fraction"] for _, r in pts], **style)
        axes[1].plot(batches, [r["tokens_per_s"] for _, r in pts], **style)
    axes[0].set(xscale="log", xlabel="batch", ylabel="achieved / copy bandwidth", title="fraction of the HBM roofline")
    axes[1].set(xscale="log", yscale="log", xlabel="batch", ylabel="tokens/s", title="decode throughput")
    axes[0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=Path(os.environ.get("OUT", "bench_out")))
    parser.add_argument("--smoke", action="store_true", help="tiny configs on the CPU (checks the script, not speed)")
    parser.add_argument("--layers", type=lambda s: [int(x) for x in s.split(",")], default=[4, 40])
    parser.add_argument("--batches", type=lambda s: [int(x) for x in s.split(",")], default=[1, 4, 16, 64])
    parser.add_argument("--prompt", type=int, default=128)
    parser.add_argument("--warmup", type=int, default=16, help="untimed steps after the prefill")
    parser.add_argument("--tokens", type=int, default=256, help="timed steps")
    parser.add_argument("--check-tokens", type=int, default=32, help="greedy tokens compared with the eager step")
    parser.add_argument("--hf-tokens", type=int, default=32)
    parser.add_argument("--copy-gib", type=float, default=2.0)
    parser.add_argument("--no-hf", action="store_true")
    parser.add_argument(
        "--impls",
        type=lambda s: s.split(","),
        default=list(IMPLS),
        help=f"which of {','.join(IMPLS)} to run (the eager step is always the reference)",
    )
    parser.add_argument(
        "--compile-options",
        type=json.loads,
        default={},
        help='torch.compile options of the compiled row, e.g. \'{"mode": "max-autotune-no-cudagraphs"}\'',
    )
    parser.add_argument(
        "--tuning",
        type=json.loads,
        default={},
        help="launch shapes of the triton row over decode.fused.TUNING, e.g. '{\"gemv_warps\": 4}'",
    )
    args = parser.parse_args()
    if unknown := sorted(set(args.impls) - set(IMPLS)):
        parser.error(f"--impls {','.join(unknown)}: choose from {','.join(IMPLS)}")
    if unknown := sorted(set(args.tuning) - set(fused_layers.TUNING)):
        parser.error(f"--tuning {','.join(unknown)}: choose from {','.join(fused_layers.TUNING)}")
    fused_layers.TUNING.update(args.tuning)

    device = torch.device("cuda" if torch.cuda.is_available() and not args.smoke else "cpu")
    dtype = torch.bfloat16 if device.type == "cuda" else torch.float32
    if args.smoke:
        args.layers, args.batches, args.prompt, args.warmup, args.tokens = [1, 2], [1, 4], 8, 1, 4
        args.check_tokens, args.hf_tokens, args.copy_gib = 4, 3, 0.0625
        torch.set_num_threads(1)  # tiny matmuls: a second thread only contends for a shared core
    copy_gbps = copy_bandwidth_gbps(device, int(args.copy_gib * 2**30))
    print(f"device {device} ({torch.cuda.get_device_name(device) if device.type == 'cuda' else 'cpu'}), {dtype}")
    print(f"copy bandwidth {copy_gbps:,.0f} GB/s")
    rows, errors, hf = [], {}, {}
    for n_layers in args.layers:
        if args.smoke:
            cfg = ZayaConfig.from_preset("zaya1-tiny", num_hidden_layers=n_layers, name=f"smoke-{n_layers}L")
        else:
            cfg = ZayaConfig.from_preset("zaya1-base", num_hidden_layers=n_layers, name=f"zaya1-base-{n_layers}L")
        result = bench_layers(cfg, args, device, dtype, copy_gbps)
        rows += result["rows"]
        errors.update({f"{n_layers}L/{k}": v for k, v in result["errors"].items()})
        hf[n_layers] = result["hf"]
    summary = {
        "rows": rows,
        "copy_bandwidth_gbps": copy_gbps,
        "targets": check_targets(rows, args.layers),
        "errors": errors,
        "hf": hf,
        "device": torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu",
        "torch": torch.__version__,
        "dtype": str(dtype),
        "settings": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
        "fused_tuning": dict(fused_layers.TUNING),
    }
    write_text_atomic(args.out / "decode.json", json.dumps(summary, indent=1))
    plot(rows, args.out / "decode.png")
    print(f"\n{'layers':>6} {'batch':>5} {'impl':<15}{'ms/token':>10}{'tokens/s':>11}{'GB/s':>9}{'roofline':>9}")
    for r in rows:
        print(
            f"{r['layers']:>6} {r['batch']:>5} {r['impl']:<15}{r['ms_per_token']:>10.3f}{r['tokens_per_s']:>11.1f}"
            f"{r['achieved_gbps']:>9.1f}{r['roofline_fraction']:>9.1%}"
        )
    for key, target in summary["targets"].items():
        print(f"target {key}: {target['value']:.3g} (>= {target['target']}): {'met' if target['met'] else 'NOT met'}")


if __name__ == "__main__":
    main()
