"""A worker for the distributed Muon test (torchrun, gloo): two Muon steps on the same seeded parameters and
gradients, alone (`single`), under DDP-style replication with the Newton-Schulz work shared (`ddp`), or on FSDP2
DTensors (`fsdp`). `python muon_dist_worker.py --modes ddp fsdp --out DIR` runs the given modes one after another
on one process group (each on fresh parameters); rank 0 saves DIR/<mode>.pt: the full parameters and each rank's
Newton-Schulz matrix count. `run("single")` needs no process group (the test calls it in its own process)."""

import argparse
from pathlib import Path

import torch
import torch.distributed as dist
from torch import nn
from zaya_train.optim import Muon

SHAPES = {"w_wide": (24, 40), "w_tall": (40, 24), "experts": (4, 16, 32), "odd_experts": (3, 8, 8), "norm": (10,)}


def build() -> nn.Module:
    gen = torch.Generator().manual_seed(0)
    module = nn.Module()
    for name, shape in SHAPES.items():
        module.register_parameter(name, nn.Parameter(torch.randn(shape, generator=gen)))
    return module


def grads(step: int) -> dict[str, torch.Tensor]:
    gen = torch.Generator().manual_seed(100 + step)
    return {name: torch.randn(shape, generator=gen) for name, shape in SHAPES.items()}


def run(mode: str) -> dict[str, object]:
    """Two Muon steps in `mode` (single, ddp or fsdp; the latter two on the default process group): the full
    parameters and every rank's Newton-Schulz matrix count ("ns_matrices_per_rank")."""
    module = build()
    if mode == "fsdp":
        from torch.distributed.device_mesh import init_device_mesh
        from torch.distributed.fsdp import fully_shard

        fully_shard(module, mesh=init_device_mesh("cpu", (dist.get_world_size(),)))
    matrices = [p for n, p in module.named_parameters() if n != "norm"]
    opt = Muon(
        [{"params": matrices, "use_muon": True}, {"params": [module.norm], "use_muon": False}],
        lr=0.05,
        weight_decay=0.1,
        ns_round_elements=1024,  # one or two matrices per rank per round: sharing across several rounds
    )
    for step in range(2):
        for name, p in module.named_parameters():
            g = grads(step)[name]
            if mode == "fsdp":
                from torch.distributed.tensor import distribute_tensor

                g = distribute_tensor(g, p.device_mesh, p.placements)
            p.grad = g
        opt.step()
    counts = [opt.ns_matrices]
    if mode != "single":
        counts = [None] * dist.get_world_size()
        dist.all_gather_object(counts, opt.ns_matrices)
    full: dict[str, object] = {"ns_matrices_per_rank": counts}
    for name, p in module.named_parameters():
        full[name] = (p.full_tensor() if mode == "fsdp" else p).detach().clone()
    return full


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--modes", nargs="+", choices=("ddp", "fsdp"), required=True)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    dist.init_process_group("gloo")
    for mode in args.modes:
        full = run(mode)
        if dist.get_rank() == 0:
            torch.save(full, args.out / f"{mode}.pt")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
