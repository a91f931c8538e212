"""zaya-train's per-rank plain train state (`train-rank<NNNNN>.pkl`), carried to a new world size.

zaya-train's sampler position is global: every rank draws the same global batch and reads its own rows, so
`sampler.drawn` (windows taken per source) is the same integer dict on every rank and holds for any world
size whose ranks split the global batch. The rest of the state (step, tokens, phase, loss history, anomaly
window) is global too; only the RNG states are per rank. So a rank of the new world gets the state of the old
rank with its number, or rank 0's when the world grew (what zaya-train itself falls back to), with
`world_size` set to the new world. What cannot move is refused before anything is written: ZeRO-1 optimizer
shards in the older pickled form (`zero1_optim`, kept in these files, partitioned by world size) and ranks whose
sampler positions disagree. Current zaya-train saves ZeRO-1 state in the DCP checkpoint by parameter name
(`optim.state.<fqn>.<name>`, each entry written by the rank that owns it), which is the form DDP writes: such a
checkpoint reshapes like DDP and its train states hold nothing per world size but the RNG states.

The files are unpickled by zaya-config's restricted unpickler (plain containers, numpy arrays and dtypes, CPU
tensors; `zaya_config.train_checkpoint.train_state`): a checkpoint is data, never code. File names come from `zaya_config.train_checkpoint.layout` (the contract
ckpt-reshape shares with zaya-train); the keys read here follow `zaya_train.trainer.Trainer.train_state`.
"""

from __future__ import annotations

import pickle
from pathlib import Path

from zaya_config.safe_pickle import UnsafePickleError
from zaya_config.train_checkpoint.layout import train_state_files, train_state_name
from zaya_config.train_checkpoint.train_state import load_train_state as _load_train_state

from ckpt_reshape.errors import ReshapeError

_GLOBAL_KEYS = ("progress", "sampler", "recipe")  # must agree across ranks for the state to be re-split


def load_train_state(path: Path) -> dict:
    """One rank's train state, through zaya-config's restricted unpickler (`zaya_config.safe_pickle`)."""
    try:
        return _load_train_state(path)
    except UnsafePickleError as err:
        raise ReshapeError(
            f"{err}; ckpt-reshape re-pickles train states only for another world size: reshape with the same "
            "world size, which copies these files unchanged"
        ) from None


def reshape_train_states(folder: Path, old_world: int | None, new_world: int) -> dict[str, bytes]:
    """File name -> bytes of the train state of every rank of `new_world` (raises before anything is written).

    The same world size gets the files byte for byte; another one gets re-pickled states (module docstring).
    """
    files = train_state_files(folder)
    if not files:
        return {}
    old_world = old_world or max(files) + 1
    missing = [train_state_name(r) for r in range(old_world) if r not in files]
    if missing:
        raise ReshapeError(
            f"{folder}: train state of {len(missing)} of {old_world} ranks is missing ({', '.join(missing[:3])}); "
            "copy the whole step folder"
        )
    if new_world == old_world:
        return {train_state_name(r): files[r].read_bytes() for r in range(old_world)}
    states = [load_train_state(files[r]) for r in range(old_world)]
    for rank, state in enumerate(states):
        if state.get("zero1_optim") is not None:
            raise ReshapeError(
                f"{files[rank]}: holds a ZeRO-1 optimizer shard in the older pickled form, which is partitioned "
                f"for {old_world} ranks and cannot be re-split for {new_world}; resume this run on {old_world} "
                "ranks with current zaya-train and let it save once (it then stores ZeRO-1 state by parameter "
                "name, which reshapes), or convert with --model-only and start a fresh optimizer"
            )
        for key in _GLOBAL_KEYS:
            if state.get(key) != states[0].get(key):
                raise ReshapeError(
                    f"{files[rank]}: `{key}` differs from rank 0's ({files[0].name}); zaya-train keeps it global, "
                    f"so a checkpoint where ranks disagree cannot be re-split for {new_world} ranks"
                )
    out = {}
    for rank in range(new_world):
        state = dict(states[rank] if rank < old_world else states[0])
        if "world_size" in state:
            state["world_size"] = new_world
        out[train_state_name(rank)] = pickle.dumps(state, protocol=5)
    return out
