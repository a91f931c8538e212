"""Expert parallelism and HSDP on the GPUs of one node: zaya-train's own `Trainer` (built from the `pretrain`
service's config, as train_step.py and dp_scaling.py build it, with dp_scaling.py's settings: zaya1-base width
with 16 experts and 8 layers, Muon, sequence 4096, global batch 64, no activation checkpointing), under torchrun.
Each row is one layout over the same GPUs: FSDP2 (the baseline), HSDP (replicate 2 x shard N/2), FSDP2 + EP and
DDP + EP at every EP size dividing the GPUs and the experts, HSDP + EP. It reports tokens/s per GPU, the
all-to-all time share (the wall time inside the EP dispatch's `all_to_all_single` calls, CUDA events around
each, over the step time: they block the step, the split sizes being read on the host), the bytes they moved per
GPU beside `zaya_model.expert_parallel_traffic`'s number for balanced routing, peak memory and MFU:

    python3 -m torch.distributed.run --standalone --nproc_per_node 8 \\
        packages/zaya-train/benchmarks/ep_hsdp_throughput.py --data-dir data --out $OUT

`--smoke`: zaya1-tiny on CPU with gloo (the wall time of each call instead of CUDA events; tested with 2
processes). Rank 0 writes ep_hsdp.json / .csv and prints the table. Not yet run on GPUs: no machine with more
than one GPU has been lent (BENCHMARKS.md, "Expert parallelism and HSDP").
"""

import time
from pathlib import Path

import torch
import torch.distributed as dist
from dp_scaling import node_arguments, node_overrides, write_rows  # same folder: the data-parallel benchmark
from train_step import build_trainer, time_trainer  # the single-GPU benchmark


class AllToAllTimer:
    """Time and bytes of every `all_to_all_single` while on (the EP dispatch calls it through `dist.`)."""

    def __init__(self, device: torch.device) -> None:
        self.device, self.on = device, False
        self.events: list[tuple] = []
        self.host_s = 0.0
        self.sent_bytes = 0
        self._original = dist.all_to_all_single
        dist.all_to_all_single = self._timed

    def _timed(self, output, input, output_split_sizes=None, input_split_sizes=None, group=None, async_op=False):
        if not self.on:
            return self._original(output, input, output_split_sizes, input_split_sizes, group=group, async_op=async_op)
        size, me = dist.get_world_size(group), dist.get_rank(group)
        rows = input_split_sizes or [input.shape[0] // size] * size
        self.sent_bytes += (sum(rows) - rows[me]) * (input[0].numel() * input.element_size() if len(input) else 0)
        if self.device.type == "cuda":
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            work = self._original(output, input, output_split_sizes, input_split_sizes, group=group, async_op=async_op)
            end.record()
            self.events.append((start, end))
            return work
        began = time.perf_counter()
        work = self._original(output, input, output_split_sizes, input_split_sizes, group=group, async_op=async_op)
        self.host_s += time.perf_counter() - began
        return work

    def reset(self) -> None:
        self.events, self.host_s, self.sent_bytes = [], 0.0, 0

    def total_ms(self) -> float:
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)
            return sum(start.elapsed_time(end) for start, end in self.events)
        return self.host_s * 1e3

    def close(self) -> None:
        dist.all_to_all_single = self._original


def layouts(world: int, experts: int) -> list[tuple[str, list[str]]]:
    """(label, overrides) of every layout measured on `world` GPUs."""
    rows = [("fsdp", ["train.distributed.strategy=fsdp"])]
    replicate = 2 if world % 2 == 0 and world > 2 else None
    if replicate:
        rows.append((f"hsdp {replicate}x{world // replicate}", ["train.distributed.strategy=fsdp",
                                                                f"train.distributed.data_parallel_replicate={replicate}"]))  # fmt: skip
    for ep in (2, 4, 8, 16):
        if ep > world or world % ep or experts % ep:
            continue
        for strategy in ("fsdp", "ddp"):
            rows.append((f"{strategy} + ep {ep}", [f"train.distributed.strategy={strategy}",
                                                   f"train.distributed.expert_parallel={ep}"]))  # fmt: skip
        if replicate and (world // replicate) % ep == 0:
            rows.append((f"hsdp {replicate}x{world // replicate} + ep {ep}", [
                "train.distributed.strategy=fsdp", f"train.distributed.data_parallel_replicate={replicate}",
                f"train.distributed.expert_parallel={ep}"]))  # fmt: skip
    return rows


def run_layout(label: str, overrides: list[str], args, run_dir: Path, timer: AllToAllTimer) -> dict:
    from zaya_model.ep_traffic import expert_parallel_traffic
    from zaya_train.metrics import mfu

    trainer = build_trainer(overrides, run_dir)
    device = trainer.ctx.device
    try:
        if device.type == "cuda":
            torch.cuda.reset_peak_memory_stats(device)
        for _ in range(args.warmup):  # compiles; not timed
            trainer.train_step(trainer.sampler.next_batch(trainer.global_batch_size()))
        timer.reset()
        timer.on = True
        timing = time_trainer(trainer, args.steps, 0)
        timer.on = False
        steps = args.steps
        world = trainer.ctx.world_size
        measured = torch.tensor([timing["step_ms"], timer.total_ms() / steps, timer.sent_bytes / steps],
                                dtype=torch.float64, device=device)  # fmt: skip
        dist.all_reduce(measured, op=dist.ReduceOp.MAX)  # the slowest rank sets the pace
        step_ms, a2a_ms, sent = measured.tolist()
        tokens_per_s = timing["tokens_per_step"] / (step_ms / 1e3)
        row = {"layout": label, "world_size": world, "seq_len": args.seq, "global_batch": args.global_batch,
               "micro_batch": args.micro_batch, "step_ms": step_ms, "tokens_per_s": tokens_per_s,
               "tokens_per_s_per_gpu": tokens_per_s / world, "all_to_all_ms": a2a_ms,
               "all_to_all_share": a2a_ms / step_ms, "all_to_all_bytes_per_gpu": sent,
               "mfu": mfu(tokens_per_s, trainer.flops_per_token(args.seq), trainer.hardware, "bf16", world)}  # fmt: skip
        ep = trainer.ctx.expert_parallel
        if ep > 1:  # the planning number: balanced routing at the skip target, spread evenly over the experts
            micro_tokens = args.micro_batch * args.seq
            dtype_bytes = 2 if trainer.cfg.precision == "bf16" else 4
            recompute = trainer.cfg.activation_checkpointing != "none"
            per_micro = expert_parallel_traffic(trainer.model.config, micro_tokens, ep, dtype_bytes, recompute)
            micro = args.global_batch // (args.micro_batch * trainer.mesh.dp)
            row["all_to_all_bytes_per_gpu_balanced"] = per_micro.total * micro
        if device.type == "cuda":
            row["peak_mem_gib"] = torch.cuda.max_memory_allocated(device) / 2**30
        return row
    except torch.OutOfMemoryError:
        return {"layout": label, "error": "out of memory"}
    finally:
        timer.on = False
        trainer.close()
        if torch.cuda.is_available():
            torch.cuda.empty_cache()


def main() -> None:
    parser = node_arguments(__doc__.splitlines()[0], micro_batch=4)
    parser.add_argument("--only", nargs="*", default=None, help="labels of the layouts to run (default: all)")
    args = parser.parse_args()
    overrides = node_overrides(args, smoke_micro_batch=1)
    if args.smoke:
        args.steps = 1
    import os

    from zaya_model import ZayaConfig

    experts = ZayaConfig.from_preset(overrides[0].split("=")[1]).num_experts

    world = int(os.environ.get("WORLD_SIZE", "1"))
    device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0"))) if torch.cuda.is_available() else None
    timer = AllToAllTimer(device or torch.device("cpu"))
    rows = []
    for label, layout in layouts(world, experts):
        if args.only is None or label in args.only:
            rows.append(run_layout(label, [*overrides, *layout], args, args.out / "run", timer))
    timer.close()
    if dist.get_rank() == 0:
        write_rows(args.out, "ep_hsdp", rows)
        print(f"{'layout':>18} {'GPUs':>4} {'step ms':>9} {'tok/s/GPU':>10} {'a2a share':>9} {'a2a GB/GPU':>10} "
              f"{'peak GiB':>8}")  # fmt: skip
        for r in rows:
            if "error" in r:
                print(f"{r['layout']:>18}  {r['error']}")
                continue
            print(f"{r['layout']:>18} {r['world_size']:>4} {r['step_ms']:>9.1f} {r['tokens_per_s_per_gpu']:>10.0f} "
                  f"{r['all_to_all_share']:>9.3f} {r['all_to_all_bytes_per_gpu'] / 1e9:>10.3f} "
                  f"{r.get('peak_mem_gib', float('nan')):>8.1f}")  # fmt: skip
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
