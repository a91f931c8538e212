"""torchtitan 0.3 DCP checkpoint keys <-> ckpt-reshape's logical names: the one home of that mapping.

torchtitan's `CheckpointManager` (components/checkpointer/dcp.py) saves one DCP folder per step (`step-<N>`)
from `{**model_state, "optimizer": ..., "lr_scheduler": ..., "dataloader": ..., "train_state": ...}`: the
model's state dict is flattened into the top level (`_flattened_model_states_sd`: keys such as
`layers.0.attention.qkv_linear.wq.weight`, nested path `(key,)`), the optimizer's is torchtitan's flat,
FQN-keyed one (`optimizer.state.<param fqn>.<exp_avg|exp_avg_sq|step>`, `optimizer.param_groups.<param fqn>.
<lr|betas|...>`, path `("optimizer", "state.<...>")`), the rest under their own names. The parameter FQNs of
the optimizer are the module's own (a fused `qkv_linear.wqkv.weight`), while the model entries are what its
state-dict hooks give (that weight as `wq`, `wk`, `wv`). MoE experts are stacked by global expert id on dim 0
(`layers.<i>.moe.routed_experts.inner_experts.w1_EFD`: [experts, ffn, dim]), which torchtitan shards over EP
along that dim.

Logical names: `model.<key>` for the model, `optim.<rest>` for `optimizer.<rest>` (so `optim.state.<fqn>.
<state>` follows the contract of `index.py` and its parameter's split), `train.<key>` for the rest
(`train.lr_scheduler.last_epoch`, `train.dataloader`, `train.train_state`); another trainer's `train.<key>`
is written as `train_state.<key>` and read back as it was.
"""

from __future__ import annotations

import re
from pathlib import Path

OPTIMIZER, TRAIN_STATE = "optimizer", "train_state"
MODEL_FREE = ("lr_scheduler", "dataloader", TRAIN_STATE)  # torchtitan's other top-level names
EXPERTS_PATTERN = "*.routed_experts.*"  # its MoE experts: dim 0 is the global expert id
_STEP_FOLDER = re.compile(r"^step-(\d+)$")


def logical_name(key: str, path: tuple) -> str:
    """The logical name of a torchtitan DCP entry (`path`: its nested state-dict path)."""
    top = path[0] if path else key.split(".")[0]
    if top == OPTIMIZER:
        return "optim." + key[len(OPTIMIZER) + 1 :]
    if top == TRAIN_STATE and key != TRAIN_STATE:
        return "train." + key[len(TRAIN_STATE) + 1 :]  # another trainer's `train.<key>` kept under train_state
    if top in MODEL_FREE:
        return "train." + key
    return "model." + key


def logical_path(name: str) -> tuple[str, ...]:
    """The nested path of a logical entry in our own layout (`("optim", "state", fqn, state)` ...), so a
    torch.save or DCP export of a torchtitan checkpoint nests as ours do, not as torchtitan's."""
    head, _, rest = name.partition(".")
    if head == "optim":
        group, _, rest = rest.partition(".")
        fqn, _, leaf = rest.rpartition(".")
        return (head, group, fqn, leaf) if fqn else (head, group, rest)
    return (head, rest)


def torchtitan_key(name: str) -> tuple[str, tuple] | None:
    """Inverse of `logical_name`: (DCP key, nested path); None for an entry with no torchtitan place."""
    if name.startswith("model."):
        key = name[len("model.") :]
        return key, (key,)
    if name.startswith("optim."):
        rest = name[len("optim.") :]
        return f"{OPTIMIZER}.{rest}", (OPTIMIZER, rest)
    if name.startswith("train."):
        key = name[len("train.") :]
        if key.partition(".")[0] not in MODEL_FREE:
            key = f"{TRAIN_STATE}.{key}"
        top, _, rest = key.partition(".")
        return key, ((top, rest) if rest else (top,))
    return None


def looks_like_torchtitan(path: Path, keys: list[str], paths: dict) -> bool:
    """A DCP folder torchtitan wrote: none of our `model.` / `optim.` names, and torchtitan's step folder name
    (`step-<N>`) or its optimizer entries (path `("optimizer", ...)`)."""
    if any(k.startswith(("model.", "optim.")) for k in keys):
        return False
    if _STEP_FOLDER.match(Path(path).name):
        return True
    return any(tuple(paths.get(k, ()))[:1] == (OPTIMIZER,) for k in keys)


def resolve_torchtitan_root(path: Path) -> Path:
    """torchtitan's checkpoint folder (`step-<N>/` folders, each with a `.metadata`) stands for its newest step,
    the one torchtitan itself resumes from."""
    path = Path(path)
    if not path.is_dir() or (path / ".metadata").exists():
        return path
    steps = [
        (int(m.group(1)), p)
        for p in path.iterdir()
        if (m := _STEP_FOLDER.match(p.name)) and (p / ".metadata").is_file()
    ]
    return max(steps)[1] if steps else path
