"""One rank of the context-parallel equivalence test:
python zaya_model_cp_worker.py RANK WORLD INIT_FILE OUT_DIR CASES_JSON, CASES_JSON a list of
[name, seq_len, bias, compile_backend or null].

The ranks form one gloo group and run every case given, one after another (each process imports torch once
for all of them, not once per case). Per case every rank builds the same zaya1-tiny and the same batch, takes
its zigzag chunks, and runs the loss and the logits under context parallelism; rank 0 writes OUT_DIR/<name>.pt:
the loss, the logits of the whole sequence, the gradients summed over the group and the router counts summed
over the group (what one rank would have), and the bytes the model's own collectives carried in the loss's
forward and backward (torch.distributed's all_gather / all_reduce, counted by a wrapper)."""

import json
import os
import sys

import torch
import torch.distributed as dist
from zaya_model import ZayaConfig, build_model
from zaya_model.context_parallel import ContextParallel, gather_sequence, shard_sequence

BATCH = 2


def make_model(bias: bool) -> torch.nn.Module:
    torch.manual_seed(0)
    # conv kernels 3 and 2: a halo of 3 tokens (zaya1-tiny's 2 and 2 give 2; the trainer tests run those)
    cfg = ZayaConfig.from_preset("zaya1-tiny", attention_bias=bias, lm_head_bias=bias, cca_time0=3)
    model = build_model(cfg).train()
    with torch.no_grad():  # non-trivial biases and conv weights, so the halo's start values matter
        for name, p in model.named_parameters():
            if name.endswith("bias") or "conv" in name:
                p.add_(torch.randn(p.shape, generator=torch.Generator().manual_seed(len(name))) * 0.1)
    return model


def make_batch(seq_len: int) -> tuple[torch.Tensor, torch.Tensor]:
    tokens = torch.randint(0, 512, (BATCH, seq_len + 1), generator=torch.Generator().manual_seed(seq_len))
    return tokens[:, :-1], tokens[:, 1:]


def router_counts(model: torch.nn.Module) -> torch.Tensor:
    return torch.stack([layer.moe.router.load_counts for layer in model.layers])


class CollectiveBytes:
    """Counts the bytes of the full tensors that dist.all_gather produces and dist.all_reduce reduces."""

    def __init__(self) -> None:
        self.gathered = self.reduced = 0
        self.all_gather, self.all_reduce = dist.all_gather, dist.all_reduce

    def install(self) -> None:
        # Not traced by torch.compile (a compiled block would guard on the counters' values and recompile each
        # time they grow); the collectives they wrap break the graph there anyway.
        @torch.compiler.disable
        def all_gather(outputs, tensor, *args, **kwargs):
            self.gathered += sum(t.numel() * t.element_size() for t in outputs)
            return self.all_gather(outputs, tensor, *args, **kwargs)

        @torch.compiler.disable
        def all_reduce(tensor, *args, **kwargs):
            self.reduced += tensor.numel() * tensor.element_size()
            return self.all_reduce(tensor, *args, **kwargs)

        dist.all_gather, dist.all_reduce = all_gather, all_reduce

    def uninstall(self) -> None:
        dist.all_gather, dist.all_reduce = self.all_gather, self.all_reduce


def run_case(out_path: str, seq_len: int, bias: bool, backend: str | None) -> None:
    """One case on the current group; rank 0 writes its results to out_path."""
    world, rank = dist.get_world_size(), dist.get_rank()
    model = make_model(bias)
    if backend:  # compiled blocks (torch.compile), as the trainer runs them on GPUs
        model.compile_blocks(backend=backend)
    cp = ContextParallel.of_group(None)
    model.set_context_parallel(cp)
    ids, labels = make_batch(seq_len)
    ids_local, labels_local, mask_local = shard_sequence(ids, labels, cp)
    forward, backward = CollectiveBytes(), CollectiveBytes()
    forward.install()
    loss = model(ids_local, attention_mask=mask_local, labels=labels_local)
    forward.uninstall()
    backward.install()
    loss.backward()
    backward.uninstall()
    grads = {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}
    for g in grads.values():
        dist.all_reduce(g)
    counts = router_counts(model).clone()
    dist.all_reduce(counts)
    with torch.no_grad():
        model.eval()
        logits = gather_sequence(model(ids_local, attention_mask=mask_local), cp)[:, :seq_len]
    losses = [torch.zeros(()) for _ in range(world)]
    dist.all_gather(losses, loss.detach())
    if rank == 0:
        out = {"loss": loss.detach(), "losses": torch.stack(losses), "grads": grads, "counts": counts,
               "logits": logits, "local_len": ids_local.shape[1],
               "bytes": {"forward_gathered": forward.gathered, "forward_reduced": forward.reduced,
                         "backward_gathered": backward.gathered, "backward_reduced": backward.reduced}}  # fmt: skip
        torch.save(out, out_path)


def main(rank: int, world: int, init_file: str, out_dir: str, cases: list) -> None:
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=world)
    try:
        for name, seq_len, bias, backend in cases:
            run_case(os.path.join(out_dir, f"{name}.pt"), seq_len, bias, backend)
    finally:
        dist.destroy_process_group()


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4], json.loads(sys.argv[5]))
