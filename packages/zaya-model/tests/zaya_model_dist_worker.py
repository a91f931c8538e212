"""One rank of the distributed balancing test: python zaya_model_dist_worker.py RANK INIT_FILE OUT_DIR."""

import os
import sys

import torch
import torch.distributed as dist
from zaya_model import ZayaConfig, build_model


def make_model() -> torch.nn.Module:
    torch.manual_seed(0)
    return build_model(ZayaConfig.from_preset("zaya1-tiny")).train()


def rank_counts(rank: int) -> list[torch.Tensor]:
    base = torch.tensor([[5.0, 1.0, 1.0, 1.0, 2.0], [1.0, 6.0, 0.0, 1.0, 0.0]], dtype=torch.float64)
    return list(base if rank == 0 else base.flip(-1))


def main(rank: int, init_file: str, out_dir: str) -> None:
    dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=2)
    try:
        model = make_model()
        for layer, counts in zip(model.layers, rank_counts(rank), strict=True):
            layer.moe.router.load_counts.copy_(counts)
        fractions = model.update_router_biases()
        biases = torch.stack([layer.moe.router.balancing_biases for layer in model.layers])
        torch.save({"fractions": fractions, "biases": biases}, os.path.join(out_dir, f"rank{rank}.pt"))
    finally:
        dist.destroy_process_group()


if __name__ == "__main__":
    main(int(sys.argv[1]), sys.argv[2], sys.argv[3])
