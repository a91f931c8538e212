"""The EP dispatch on one GPU under NCCL (what a one-GPU machine can check of expert parallelism): a 1-rank NCCL
group holding every expert, bf16 autocast (the grouped GEMM on sm90), eager and compiled blocks, against the same
model without EP (loss, gradients); and generation under EP (no CUDA graph) against generation without. Needs
only torch and the tree's sources:

    PYTHONPATH=$(ls -d $PWD/packages/*/src | paste -sd:) python3 packages/zaya-train/benchmarks/ep_one_gpu_check.py

Writes gpu_ep.json to $OUT (default /tmp). BENCHMARKS.md, "Expert parallelism and HSDP", has the H100 result.
"""

import json
import os
from pathlib import Path

import torch
import torch.distributed as dist


def max_relative(got: dict, want: dict) -> tuple[float, str, float]:
    """(largest error over a tensor's largest magnitude, where, the median of those errors) over the gradients."""
    errs = {k: ((got[k] - v).abs().max() / v.abs().max().clamp_min(1e-12)).item() for k, v in want.items()}
    worst = max(errs, key=errs.get)
    return errs[worst], worst, sorted(errs.values())[len(errs) // 2]


def main() -> None:
    from zaya_model import ExpertParallel, ZayaConfig, build_model

    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29533")
    dev = torch.device("cuda", 0)
    dist.init_process_group("nccl", rank=0, world_size=1, device_id=dev)
    cfg = ZayaConfig.from_preset("zaya1-tiny", hidden_size=256, moe_intermediate_size=256, num_experts=8)

    def make(mode: str = "train"):
        torch.manual_seed(0)
        with torch.device(dev):
            return build_model(cfg).train(mode == "train")

    torch.manual_seed(1)
    ids = torch.randint(0, cfg.vocab_size, (4, 257), device=dev)

    def step(model) -> tuple[float, dict]:
        model.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = model(ids[:, :-1], labels=ids[:, 1:])
        loss.backward()
        return loss.item(), {n: p.grad.float().clone() for n, p in model.named_parameters()}

    out: dict = {}
    eager_loss, eager = step(make())
    for compiled in (False, True):
        model = make()
        if compiled:
            model.compile_blocks()
        plain_loss, plain = step(model)
        model.set_expert_parallel(ExpertParallel(None, 1, 0))
        ep_loss, ep = step(model)
        out[f"compiled={compiled}"] = {
            "eager_loss": eager_loss,
            "plain_loss": plain_loss,
            "ep_loss": ep_loss,
            "plain_vs_eager (max, where, median)": max_relative(plain, eager),
            "ep_vs_eager": max_relative(ep, eager),
            "ep_vs_plain": max_relative(ep, plain),
        }
        print(out[f"compiled={compiled}"], flush=True)
    model = make("eval")
    prompt = torch.randint(0, cfg.vocab_size, (1, 8), device=dev)
    plain_tokens = model.generate(prompt, max_new_tokens=8)
    model.set_expert_parallel(ExpertParallel(None, 1, 0))
    out["generate_equal"] = bool(torch.equal(plain_tokens, model.generate(prompt, max_new_tokens=8)))
    print(out, flush=True)
    (Path(os.environ.get("OUT", "/tmp")) / "gpu_ep.json").write_text(json.dumps(out, indent=1))
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
