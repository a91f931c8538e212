"""The logical tensor index: what a checkpoint holds, independent of how its ranks and files split it.

Logical names follow torch.distributed.checkpoint's flattened keys: `model.<fqn>`, `optim.state.<fqn>.<state>`,
`optim.param_groups.<i>.<key>`, `train.<key>`. Tensors are described by `TensorMeta`; everything else
(param groups, the trainer's picklable dict) is an opaque *object* carried as its `torch.save` bytes, exactly
as DCP stores it, so converting never re-pickles what it does not understand.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache
from typing import TYPE_CHECKING

from ckpt_reshape.errors import ReshapeError
from ckpt_reshape.layout import ParallelLayout
from ckpt_reshape.torch_names import DTYPES

if TYPE_CHECKING:
    import torch


@cache
def _torch_dtypes() -> dict:
    import torch

    return {name: getattr(torch, name) for name in DTYPES}


def dtype_name(dtype: torch.dtype) -> str:
    """Short name of a dtype (`bfloat16`), as stored in every sidecar and zarr attribute (torch's dtypes and
    `torch_names.LightDtype` alike)."""
    return str(dtype).removeprefix("torch.")


def dtype_from_name(name: str, where: str = "") -> torch.dtype:
    """Inverse of `dtype_name`; an unknown name is a `ReshapeError` naming where it came from."""
    try:
        return _torch_dtypes()[name.removeprefix("torch.")]
    except KeyError:
        raise ReshapeError(
            f"unsupported dtype {name!r}{' in ' + where if where else ''}; known: {sorted(DTYPES)}"
        ) from None


@dataclass(frozen=True)
class TensorMeta:
    """Global shape and dtype of one logical tensor."""

    name: str
    shape: tuple[int, ...]
    dtype: torch.dtype

    @property
    def numel(self) -> int:
        """Number of elements."""
        n = 1
        for s in self.shape:
            n *= s
        return n

    @property
    def nbytes(self) -> int:
        """Size of the whole logical tensor in bytes."""
        return self.numel * self.dtype.itemsize


@dataclass
class CheckpointIndex:
    """Every logical entry of a checkpoint plus the layout it was written with (None when unknown)."""

    tensors: dict[str, TensorMeta] = field(default_factory=dict)
    objects: list[str] = field(default_factory=list)
    paths: dict[str, tuple] = field(default_factory=dict)  # nested state-dict path of each entry
    layout: ParallelLayout | None = None
    hf_config: dict | None = None

    def path_of(self, name: str) -> tuple:
        """Nested path of an entry (DCP's planner_data); falls back to splitting on dots."""
        return self.paths.get(name) or tuple(name.split("."))

    @property
    def total_bytes(self) -> int:
        """Bytes of all tensors."""
        return sum(t.nbytes for t in self.tensors.values())

    @property
    def largest_tensor_bytes(self) -> int:
        """Bytes of the largest single tensor (the unit the memory bound is stated in)."""
        return max((t.nbytes for t in self.tensors.values()), default=0)

    def model_only(self) -> CheckpointIndex:
        """The same index restricted to model weights (`model.*`)."""
        tensors = {k: v for k, v in self.tensors.items() if k.startswith("model.")}
        return CheckpointIndex(tensors, [], {k: self.path_of(k) for k in tensors}, self.layout, self.hf_config)

    def has_optimizer(self) -> bool:
        """Whether any optimizer entry is present."""
        return any(k.startswith("optim.") for k in [*self.tensors, *self.objects])

    def require(self, name: str, where: str) -> TensorMeta:
        """Metadata of a tensor that must exist."""
        try:
            return self.tensors[name]
        except KeyError:
            raise ReshapeError(f"{where}: no tensor {name!r} in this checkpoint") from None
