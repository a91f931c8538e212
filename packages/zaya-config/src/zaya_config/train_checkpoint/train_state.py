"""Reading a rank's `train-rank<NNNNN>.pkl` (zaya-train's plain train state) without running its code.

The file is a pickle of plain containers, numpy RNG state and CPU tensors (torch's RNG state): what
`zaya_train.checkpoint.trainer_state.train_state` writes. zaya-train (resume), its run loader and
ckpt-reshape (re-splitting for another world size) read it through `load_train_state`, which resolves only
those globals (`zaya_config.safe_pickle`). numpy and torch are imported when a file names them.
"""

from __future__ import annotations

import collections
import importlib
import io
from pathlib import Path

from zaya_config.safe_pickle import load_restricted

HOLDS = "plain containers, numpy arrays and dtypes, CPU tensors"
_BUILTINS = {"set": set, "frozenset": frozenset, "complex": complex, "slice": slice}
_NUMPY_CORE = {
    (f"numpy.{core}.{module}", name)
    for core in ("core", "_core")
    for module, name in (("multiarray", "_reconstruct"), ("multiarray", "scalar"), ("numeric", "_frombuffer"))
}
_NUMPY_SCALARS = ("float64", "float32", "int64", "int32", "uint32", "uint8", "bool_")


def _load_tensor_bytes(data: bytes) -> object:
    import torch

    return torch.load(io.BytesIO(data), weights_only=True)


def _numpy_global(module: str, name: str) -> object | None:
    allowed = (module, name) in _NUMPY_CORE or (module == "numpy" and name in ("dtype", "ndarray", *_NUMPY_SCALARS))
    if not allowed and not (module == "numpy.dtypes" and name.endswith("DType")):
        return None
    try:  # numpy 2 pickles name numpy._core, numpy 1 numpy.core: load either with the installed numpy
        return getattr(importlib.import_module(module.replace("numpy.core.", "numpy._core.")), name)
    except (ImportError, AttributeError):
        return getattr(importlib.import_module(module.replace("numpy._core.", "numpy.core.")), name, None)


def train_state_global(module: str, name: str) -> object | None:
    """The object a train-state pickle may name for `module.name`; None for anything else."""
    if module == "builtins":
        return _BUILTINS.get(name)
    if (module, name) == ("collections", "OrderedDict"):
        return collections.OrderedDict
    if module.split(".")[0] == "numpy":
        return _numpy_global(module, name)
    if (module, name) == ("torch._utils", "_rebuild_tensor_v2"):
        import torch

        return torch._utils._rebuild_tensor_v2
    if (module, name) == ("torch.storage", "_load_from_bytes"):
        return _load_tensor_bytes
    return None


def load_train_state(path: Path) -> dict:
    """One rank's train state, through the restricted unpickler (`UnsafePickleError` when it is not one)."""
    from zaya_config.safe_pickle import UnsafePickleError

    state = load_restricted(Path(path).read_bytes(), train_state_global, path, HOLDS)
    if not isinstance(state, dict):
        raise UnsafePickleError(f"{path}: train state is a {type(state).__name__}, expected zaya-train's dict")
    return state
