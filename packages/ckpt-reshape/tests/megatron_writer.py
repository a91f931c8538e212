"""One rank of the process pair that writes Megatron-Core `torch_dist` checkpoints with megatron-core itself
(for test_ckpt_reshape_megatron.py, through tests/artifact_cache.py: built once per cache).

Each layout of LAYOUTS builds megatron's own GPTModel (a tiny MoE TransformerConfig, SwiGLU, grouped query
attention, seeded the same on every layout) under `initialize_model_parallel` on a gloo group of 2 ranks and
saves `{"model": ..., "optimizer": ..., "iteration": 3, "args": Namespace(...)}` (Megatron-LM's common state
holds its argparse Namespace) with `megatron.core.dist_checkpointing.save` into OUT/<layout>/;
the optimizer state is a torch Adam's after one step, made sharded by megatron's own
`optim_state_to_sharding_state` (what its optimizers' `sharded_state_dict` does). Then the reference: every
checkpoint loaded back by `dist_checkpointing.load` into a tp=pp=ep=1 model, each global tensor assembled from
the loaded model's own ShardedTensors (their keys and global offsets), written to OUT/<layout>.reference.pt.

megatron-core 0.16.1 cannot save on a CPU-only torch: `filesystem_async.preload_tensors` calls
`torch.cuda.synchronize()` and `state_dict_saver.save_state_dict_async_finalize` broadcasts its failure flag
on `torch.cuda.current_device()`. `cpu_save_shim` points those two calls at the CPU; every byte is written
by megatron's own save.
"""

import argparse
import os
import shutil
from pathlib import Path

LAYOUTS = {  # name: (tp, pp, ep)
    "tp2": (2, 1, 1),
    "pp2": (1, 2, 1),
    "ep2": (1, 1, 2),
}
LAYERS, HIDDEN, HEADS, GROUPS, FFN, MOE_FFN, EXPERTS, VOCAB = 2, 32, 4, 2, 64, 48, 4, 64


def cpu_save_shim():
    import torch

    torch.cuda.synchronize = lambda *args, **kwargs: None
    torch.cuda.current_device = lambda: "cpu"


def build_model(pp: int):
    import torch
    from megatron.core import parallel_state as ps
    from megatron.core.models.gpt import GPTModel
    from megatron.core.models.gpt.gpt_layer_specs import get_gpt_layer_local_spec
    from megatron.core.transformer import TransformerConfig

    cfg = TransformerConfig(
        num_layers=LAYERS, hidden_size=HIDDEN, num_attention_heads=HEADS, num_query_groups=GROUPS,
        ffn_hidden_size=FFN, gated_linear_unit=True, add_bias_linear=False, normalization="RMSNorm",
        num_moe_experts=EXPERTS, moe_router_topk=2, moe_ffn_hidden_size=MOE_FFN, use_cpu_initialization=True,
        pipeline_model_parallel_size=pp, tensor_model_parallel_size=ps.get_tensor_model_parallel_world_size(),
        expert_model_parallel_size=ps.get_expert_model_parallel_world_size(), params_dtype=torch.float32,
        pipeline_dtype=torch.float32,
    )  # fmt: skip
    torch.manual_seed(0)
    model = GPTModel(
        cfg,
        get_gpt_layer_local_spec(num_experts=EXPERTS, moe_grouped_gemm=False),
        vocab_size=VOCAB,
        max_sequence_length=16,
        pre_process=ps.is_pipeline_first_stage(),
        post_process=ps.is_pipeline_last_stage(),
    )
    # the same values on every layout: each parameter from a seed of its name, global shape, its own slice
    for sh in _sharded_tensors(model.sharded_state_dict()):
        with torch.no_grad():
            sh.data.copy_(_seeded(sh.key, sh.global_shape)[_region(sh)].reshape(sh.data.shape))
    return model


def _args():
    """What Megatron-LM's training loop keeps in common.pt besides the iteration: its argparse Namespace."""
    import argparse

    return argparse.Namespace(num_layers=LAYERS, hidden_size=HIDDEN, num_attention_heads=HEADS,
                              num_query_groups=GROUPS, kv_channels=HIDDEN // HEADS, ffn_hidden_size=FFN,
                              moe_ffn_hidden_size=MOE_FFN, swiglu=True, num_experts=EXPERTS)  # fmt: skip


def _seeded(key: str, shape):
    import zlib

    import torch

    g = torch.Generator().manual_seed(zlib.crc32(key.encode()))
    return torch.randn(tuple(shape), generator=g)


def _sharded_tensors(sharded_sd):
    """Every ShardedTensor of a sharded state dict, factories (SwiGLU fc1) built into their parts."""
    from megatron.core.dist_checkpointing.mapping import ShardedTensor, ShardedTensorFactory

    out = []
    stack = list(sharded_sd.values())
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list | tuple):
            stack.extend(item)
        elif isinstance(item, ShardedTensorFactory):
            stack.extend([item.build()] if not isinstance(item.build(), list) else item.build())
        elif isinstance(item, ShardedTensor):
            out.append(item)
    return out


def optimizer_state(model, model_sd):
    """A torch Adam's state after one step, sharded the way megatron's optimizers shard theirs."""
    import torch
    from megatron.core.optimizer.optimizer import (
        get_param_id_to_sharded_param_map,
        optim_state_to_sharding_state,
    )

    params = [p for p in model.parameters()]
    opt = torch.optim.Adam(params, lr=1e-3)
    for p in params:
        p.grad = torch.full_like(p, 0.5)
    opt.step()
    state = opt.state_dict()
    id_map = get_param_id_to_sharded_param_map(model_sd, params)
    optim_state_to_sharding_state(state, id_map, exclude_keys="step")
    return state


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--verify", type=Path, help="instead: load this checkpoint and --original at every layout")
    parser.add_argument("--original", type=Path)
    args = parser.parse_args()
    import torch
    import torch.distributed as dist
    from megatron.core import dist_checkpointing
    from megatron.core import parallel_state as ps

    cpu_save_shim()
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    if args.verify is not None:
        verify(args.verify, args.original, args.out)
        dist.destroy_process_group()
        return
    for name, (tp, pp, ep) in LAYOUTS.items():
        ps.initialize_model_parallel(tp, pp, expert_model_parallel_size=ep)
        model = build_model(pp)
        model_sd = model.sharded_state_dict()
        state = {"model": model_sd, "optimizer": optimizer_state(model, model_sd), "iteration": 3, "args": _args()}
        folder = args.out / name
        if rank == 0:
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir(parents=True)
        dist.barrier()
        dist_checkpointing.save(state, str(folder))
        if name == "tp2":  # the objects megatron's DistributedOptimizer saves in its dp_zero_gather_scatter form
            state["optimizer"] = {"param_state": distributed_optimizer_object(ps)}
            dist.barrier()
            if rank == 0:
                (args.out / "distopt").mkdir()
            dist.barrier()
            dist_checkpointing.save(state, str(args.out / "distopt"))
        ps.destroy_model_parallel()
    ps.initialize_model_parallel(1, 1)
    for name in LAYOUTS:
        reference = load_reference(args.out / name)
        if rank == 0:
            torch.save(reference, args.out / f"{name}.reference.pt")
    ps.destroy_model_parallel()
    dist.destroy_process_group()


def verify(converted: Path, original: Path, out: Path) -> None:
    """Load `converted` and `original` with megatron at every layout of LAYOUTS; each rank compares what the two
    loads put in its model, tensor by tensor; rank 0 writes OUT/verify.json (compared count, mismatches)."""
    import json

    import torch
    import torch.distributed as dist
    from megatron.core import parallel_state as ps

    result = {}
    for name, (tp, pp, ep) in LAYOUTS.items():
        ps.initialize_model_parallel(tp, pp, expert_model_parallel_size=ep)
        loaded = [loaded_model(folder, pp).state_dict() for folder in (converted, original)]
        mine = [k for k, v in loaded[1].items() if torch.is_tensor(v) and not k.endswith("_extra_state")]
        bad = [k for k in mine if k not in loaded[0] or not torch.equal(loaded[0][k], loaded[1][k])]
        every = [None] * dist.get_world_size()
        dist.all_gather_object(every, (len(mine), bad))
        result[name] = {"compared": sum(n for n, _ in every), "mismatched": sorted(k for _, b in every for k in b)}
        ps.destroy_model_parallel()
    if dist.get_rank() == 0:
        out.mkdir(parents=True, exist_ok=True)
        (out / "verify.json").write_text(json.dumps(result))


def loaded_model(folder: Path, pp: int):
    """megatron's model for the current model-parallel layout, loaded by `dist_checkpointing.load` from `folder`
    (`_extra_state` entries are not asked for)."""
    from megatron.core import dist_checkpointing

    model = build_model(pp)
    wanted = {k: v for k, v in model.sharded_state_dict().items() if not k.endswith("_extra_state")}
    model.load_state_dict(dist_checkpointing.load({"model": wanted}, str(folder))["model"], strict=False)
    return model


def distributed_optimizer_object(ps):
    """The ShardedObject `DistributedOptimizer.sharded_state_dict` makes for a non-reshardable format."""
    import torch
    from megatron.core.dist_checkpointing.mapping import ShardedObject

    return ShardedObject(
        f"optimizer.distributed.dp_group_idx_{ps.get_tensor_model_parallel_rank()}.param_state",
        {"exp_avg": torch.zeros(8)},
        (1,),
        (0,),
        replica_id=(0, 0, ps.get_data_parallel_rank()),
    )


def load_reference(folder: Path) -> dict:
    """{checkpoint key: global tensor} as megatron's `dist_checkpointing.load` reads the checkpoint at `folder`
    into a tp=pp=ep=1 model (model parallel initialised to 1); `_extra_state` entries are not asked for."""
    return assemble(loaded_model(folder, 1).sharded_state_dict())


def assemble(sharded_sd) -> dict:
    """{checkpoint key: global tensor} from a loaded model's ShardedTensors (megatron's keys and offsets)."""
    import torch

    out = {}
    for sh in _sharded_tensors(sharded_sd):
        full = out.setdefault(sh.key, torch.zeros(tuple(sh.global_shape), dtype=sh.data.dtype))
        full[_region(sh)] = sh.data.detach().reshape(full[_region(sh)].shape)
    return out


def _region(sh) -> tuple[slice, ...]:
    """Where a ShardedTensor's data lies in its global tensor (prepended axes: one layer, one expert)."""
    lead = len(sh.global_shape) - sh.data.ndim
    sizes = (1,) * lead + tuple(sh.data.shape)
    return tuple(slice(o, o + s) for o, s in zip(sh.global_offset, sizes, strict=True))


if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    main()
