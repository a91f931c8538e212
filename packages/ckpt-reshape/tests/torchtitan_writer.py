"""Writes (or loads) a torchtitan 0.3 checkpoint with torchtitan itself, for test_ckpt_reshape_torchtitan.py.

torchtitan 0.3.0 does not install into this workspace (it requires datasets<4.8.0; the lock holds 5.2.0), so
its checkpoint is committed under tests/data/torchtitan/, written by this script on CPU with torchtitan run
from a folder of its own (`pip install --no-deps --target DIR torchtitan==0.3.0 torch_checkpointing==0.1.1
spmd_types==0.2.3 tyro einops torchdata docstring-parser shtab typeguard`, then `PYTHONPATH=DIR`):

    python tests/torchtitan_writer.py write OUT   # OUT/checkpoint/step-1 and OUT/reference.pt
    python tests/torchtitan_writer.py load CKPT_ROOT REFERENCE   # what torchtitan loads from CKPT_ROOT/checkpoint/step-1

`write` builds torchtitan's own Qwen3 MoE model (its config helpers at a tiny size: 2 layers, 4 experts of
width 8, dim 16, fused QKV, grouped-query attention), takes one AdamW step through its `OptimizersContainer` and one
LR scheduler step, and saves with its `CheckpointManager` (one gloo rank). The reference is what torchtitan's
`CheckpointManager.load` restores into a fresh, differently seeded model and optimizer: the model's state dict
(through torchtitan's `ModelWrapper`) and its flat optimizer state dict, tensors only.
"""

import os
import shutil
import sys
from pathlib import Path


def tiny_model():
    import torchtitan.models.qwen3 as qwen3
    from torchtitan.models.common import CosSinRoPE, Embedding, Linear

    dim, head_dim, vocab = 16, 4, 32
    layers = qwen3._build_qwen3_moe_layers(
        fuse_qkv=True, n_layers=2, dim=dim, n_heads=4, n_kv_heads=2, head_dim=head_dim, moe_hidden_dim=8,
        num_experts=4, top_k=2, attn_backend="flex", moe_comm_backend="standard",
        rope=CosSinRoPE.Config(dim=head_dim, max_seq_len=32, theta=10000.0),
    )  # fmt: skip
    return qwen3.Qwen3Model.Config(
        vocab_size=vocab,
        dim=dim,
        norm=qwen3._qwen3_norm(dim),
        tok_embeddings=Embedding.Config(num_embeddings=vocab, embedding_dim=dim, param_init=qwen3._EMBEDDING_INIT),
        lm_head=Linear.Config(in_features=dim, out_features=vocab, param_init=qwen3._LINEAR_INIT),
        layers=layers,
    ).build()


def trainer_parts(root: Path, seed: int):
    """torchtitan's model, optimizers, LR schedulers and checkpoint manager saving under `root`."""
    import torch
    from torchtitan.components.checkpoint import CheckpointManager
    from torchtitan.components.optimizer import LRSchedulersContainer, default_adamw

    torch.manual_seed(seed)
    model = tiny_model()
    model.init_weights()
    optim = default_adamw(lr=1e-3)
    optim.implementation = "for-loop"
    optimizers = optim.build(model_parts=[model])
    schedulers = LRSchedulersContainer.Config(warmup_steps=1).build(optimizers=optimizers, training_steps=4)
    manager = CheckpointManager.Config(enable=True, folder="checkpoint", interval=1).build(
        dataloader=None, model_parts=[model], optimizers=optimizers, lr_schedulers=schedulers, states={},
        sd_adapter=None, base_folder=str(root),
    )  # fmt: skip
    return model, optimizers, schedulers, manager


def loaded_state(root: Path) -> dict:
    """What torchtitan's CheckpointManager restores from root/checkpoint/step-1 (a fresh seed-1 model)."""
    from torchtitan.components.checkpointer.base import ModelWrapper

    model, optimizers, _, manager = trainer_parts(root, seed=1)
    assert manager.load(step=1)
    manager.close()
    model_sd = {k: v.detach().clone() for k, v in ModelWrapper([model]).state_dict().items()}
    optim_sd = {k: v.detach().clone() for k, v in optimizers.state_dict().items() if hasattr(v, "detach")}
    return {"model": model_sd, "optimizer": optim_sd}


def main() -> None:
    import torch
    import torch.distributed as dist

    mode, root = sys.argv[1], Path(sys.argv[2])
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29655")
    dist.init_process_group("gloo", rank=0, world_size=1)
    if mode == "write":
        shutil.rmtree(root, ignore_errors=True)
        model, optimizers, schedulers, manager = trainer_parts(root, seed=0)
        for param in model.parameters():
            param.grad = torch.full_like(param, 0.25)
        optimizers.step()
        schedulers.step()
        manager.save(curr_step=1)
        manager.close()
        torch.save(loaded_state(root), root / "reference.pt")
    else:
        torch.save(loaded_state(root), sys.argv[3])
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
