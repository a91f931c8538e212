"""Training memory per token of zaya1-base width at 16k and 32k tokens per sequence, with and without activation
checkpointing: the model's forward + backward through its fused loss (bf16 autocast over fp32 weights, as
`train=h200`), the peak CUDA memory above the weights, gradients and inputs, per token and per layer-token.

    python3 packages/zaya-train/benchmarks/cp_memory.py --out $OUT                    # one GPU (cp 1)
    python3 -m torch.distributed.run --standalone --nproc_per_node 4 \\
        packages/zaya-train/benchmarks/cp_memory.py --out $OUT                        # cp 4: each sequence over 4 GPUs

Under torchrun every rank splits each sequence (zaya_model.context_parallel) and rank 0 writes the
per-rank peak. Without CUDA it writes nothing and says so (exit 0); `--smoke` runs the same code on CPU with
zaya1-tiny and short sequences (no memory figures: CPU peaks are not tracked). Torch and zaya-model only.
"""

import argparse
import json
import os
from pathlib import Path

import torch
import torch.distributed as dist
from zaya_config.atomic import write_text_atomic
from zaya_model import ZayaConfig, build_model
from zaya_model.context_parallel import ContextParallel, shard_sequence
from zaya_train.distributed.parallelize import apply_activation_checkpointing, transformer_blocks

GIB = 2**30


def measure(
    cfg: ZayaConfig, seq_len: int, checkpointing: str, device: torch.device, cp: ContextParallel | None
) -> dict:
    """One configuration: a warm-up step (allocates the gradients), then the measured step's peak."""
    torch.manual_seed(0)
    with torch.device(device):
        model = build_model(cfg).train()
    model.set_context_parallel(cp)
    if checkpointing != "none":
        apply_activation_checkpointing(transformer_blocks(model), checkpointing)
    tokens = torch.randint(0, cfg.vocab_size, (1, seq_len + 1), device=device)
    ids, labels, mask = tokens[:, :-1], tokens[:, 1:], None
    if cp is not None:
        ids, labels, mask = shard_sequence(ids, labels, cp)
    row = {"seq_len": seq_len, "cp": cp.size if cp else 1, "local_tokens": ids.shape[1], "layers":
           cfg.num_hidden_layers, "hidden_size": cfg.hidden_size, "activation_checkpointing": checkpointing}  # fmt: skip
    try:
        for step in range(2):
            if device.type == "cuda" and step == 1:
                torch.cuda.synchronize()
                torch.cuda.reset_peak_memory_stats()
                base = torch.cuda.memory_allocated()
            with torch.autocast(device.type, dtype=torch.bfloat16):
                loss = model(ids, attention_mask=mask, labels=labels)
            loss.backward()
            model.zero_grad(set_to_none=False)
            model.reset_router_counts()
        if device.type == "cuda":
            peak = torch.cuda.max_memory_allocated() - base
            row.update(ok=True, peak_gib=peak / GIB, bytes_per_token=peak / ids.shape[1],
                       bytes_per_layer_token=peak / ids.shape[1] / cfg.num_hidden_layers)  # fmt: skip
        else:
            row.update(ok=True, peak_gib=None, bytes_per_token=None, bytes_per_layer_token=None)
    except torch.OutOfMemoryError:
        row.update(ok=False, error="out of memory")
    finally:
        del model
        if device.type == "cuda":
            torch.cuda.empty_cache()
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--layers", type=int, default=4, help="zaya1-base blocks (memory per layer-token is reported)")
    parser.add_argument("--seq", type=int, nargs="+", default=[16384, 32768])
    parser.add_argument("--checkpointing", nargs="+", default=["none", "full"], choices=["none", "selective", "full"])
    parser.add_argument("--smoke", action="store_true", help="zaya1-tiny on CPU, sequences of 64 and 128")
    args = parser.parse_args()
    if not torch.cuda.is_available() and not args.smoke:
        print("cp_memory.py measures CUDA memory and no CUDA device is visible: skipped (nothing written)")
        return
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if args.smoke:
        device = torch.device("cpu")
        cfg, seqs = ZayaConfig.from_preset("zaya1-tiny"), [64, 128]
    else:
        device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0")))
        torch.cuda.set_device(device)
        cfg = ZayaConfig.from_preset("zaya1-base", num_hidden_layers=args.layers, max_position_embeddings=max(args.seq),
                                     rope_theta=1e6)  # fmt: skip
        seqs = args.seq
    cp = None
    if world > 1:
        dist.init_process_group("nccl" if device.type == "cuda" else "gloo")
        cp = ContextParallel.of_group(None)
    rows = []
    for seq_len in seqs:
        for mode in args.checkpointing:
            row = measure(cfg, seq_len, mode, device, cp)
            rows.append(row)
            if cp is None or cp.rank == 0:
                print(json.dumps(row), flush=True)
    if cp is None or cp.rank == 0:
        meta = {"device": torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu",
                "torch": torch.__version__, "smoke": args.smoke}  # fmt: skip
        args.out.mkdir(parents=True, exist_ok=True)
        write_text_atomic(args.out / "cp_memory.json", json.dumps({"meta": meta, "rows": rows}, indent=2) + "\n")
    if dist.is_initialized():
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
