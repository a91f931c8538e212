"""Training-step time (forward + fused loss + backward) with and without `document_ids`, on one GPU.

    PYTHONPATH=packages/zaya-model/src:packages/zaya-config/src \
      python3 packages/zaya-model/benchmarks/bench_documents.py --out $OUT
    python3 packages/zaya-model/benchmarks/bench_documents.py --smoke --out /tmp/b   # CPU, tiny, seconds

Model: zaya1-base width with 4 layers, bf16 weights (as bench_model.py). Each window packs documents whose
lengths are drawn (seeded) from an exponential of mean --mean-doc tokens. Rows: eager and compiled
(`compile_blocks`), each unmasked and masked (eager: SDPA with the bool mask; compiled on CUDA: flex attention
on the BlockMask). Writes bench_documents.json under --out and prints one line per row.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import torch
from bench_model import timed  # the same warm-up, synchronise and time loop as bench_model
from zaya_config.atomic import write_text_atomic
from zaya_model import ZayaConfig, build_model


def packed_documents(batch: int, seq: int, mean_len: float, gen: torch.Generator) -> torch.Tensor:
    """Document ids [batch, seq]: runs of exponential lengths (at least 1 token)."""
    rows = []
    for _ in range(batch):
        ids, doc = [], 0
        while len(ids) < seq:
            n = max(1, int(torch.empty(1).exponential_(1 / mean_len, generator=gen).item()))
            ids += [doc] * n
            doc += 1
        rows.append(torch.tensor(ids[:seq]))
    return torch.stack(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--seq", type=int, default=2048)
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--mean-doc", type=float, default=512.0)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--smoke", action="store_true", help="tiny config on CPU (checks the script, not speed)")
    args = parser.parse_args()
    device = torch.device("cuda" if torch.cuda.is_available() and not args.smoke else "cpu")
    dtype = torch.bfloat16 if device.type == "cuda" else torch.float32
    if args.smoke:
        cfg = ZayaConfig.from_preset("zaya1-tiny", num_hidden_layers=2, name="smoke")
        args.batch, args.seq, args.mean_doc, args.steps, args.warmup = 2, 32, 8.0, 1, 1
    else:
        cfg = ZayaConfig.from_preset("zaya1-base", num_hidden_layers=args.layers, name=f"zaya1-base-{args.layers}L")
    gen = torch.Generator().manual_seed(0)
    ids = torch.randint(0, cfg.vocab_size, (args.batch, args.seq + 1), generator=gen).to(device)
    docs = packed_documents(args.batch, args.seq, args.mean_doc, gen).to(device)
    torch.manual_seed(0)
    model = build_model(cfg).to(device=device, dtype=dtype).train()
    rows = []
    for compiled in (False, True):
        if compiled:
            model.compile_blocks(backend="aot_eager" if args.smoke else "inductor")
        for masked in (False, True):
            document_ids = docs if masked else None

            def step(document_ids=document_ids) -> None:
                model(ids[:, :-1], labels=ids[:, 1:], document_ids=document_ids).backward()
                model.zero_grad(set_to_none=True)

            ms = timed(step, args.steps, args.warmup, device) * 1e3
            row = {"compiled": compiled, "masked": masked, "step_ms": round(ms, 3),
                   "tokens_per_s": round(args.batch * args.seq / ms * 1e3)}  # fmt: skip
            rows.append(row)
            print(json.dumps(row), flush=True)
    meta = {"device": torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu",
            "torch": torch.__version__, "config": cfg.name, "batch": args.batch, "seq": args.seq,
            "mean_doc": args.mean_doc, "documents_per_row": round(float(docs[:, -1].float().mean()) + 1, 2),
            "steps": args.steps, "warmup": args.warmup, "dtype": str(dtype)}  # fmt: skip
    args.out.mkdir(parents=True, exist_ok=True)
    write_text_atomic(args.out / "bench_documents.json", json.dumps({"meta": meta, "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
