"""Stand-ins for the torch objects that checkpoint metadata names, and a pickler that writes them under torch's
names, so a conversion that only moves bytes never imports torch (about 2 s of start-up).

A DCP `.metadata` and a `torch.save` archive's `data.pkl` are pickles naming a few torch globals: dtypes,
`torch.Size`, storage classes, DCP's metadata dataclasses. Reading, the restricted unpicklers map those names
to the stand-ins here (`LightDtype`, `Size`, ...); writing, `TorchNamePickler` (the stdlib's pure-Python
pickler, whose `save_global` can be told a name without importing its module) emits exactly the opcodes
torch's own pickling would: the same globals, memo and framing, so the files are byte for byte those of the
torch path (tested against torch itself, `test_ckpt_reshape_torch_free.py`).
"""

from __future__ import annotations

import pickle
import types
from dataclasses import dataclass


class NeedsTorch(Exception):
    """The torch-free path met something only torch reads or writes; the conversion reruns with torch."""


@dataclass(frozen=True, eq=False)
class LightDtype:
    """A torch dtype by name: its size, and the legacy storage class `torch.save` names for it."""

    name: str
    itemsize: int
    storage: str

    def __str__(self) -> str:
        return f"torch.{self.name}"

    __repr__ = __str__

    def __reduce__(self) -> str:
        return self.name  # pickled as the global `torch.<name>`, as torch's dtypes are


_TABLE = """
float64 8 DoubleStorage      float32 4 FloatStorage      float16 2 HalfStorage    bfloat16 2 BFloat16Storage
int64 8 LongStorage          int32 4 IntStorage          int16 2 ShortStorage     int8 1 CharStorage
uint8 1 ByteStorage          bool 1 BoolStorage          float8_e4m3fn 1 Float8_e4m3fnStorage
float8_e5m2 1 Float8_e5m2Storage
"""  # name, bytes per element, legacy storage class: every dtype ckpt-reshape converts
_WORDS = _TABLE.split()
DTYPES: dict[str, LightDtype] = {
    name: LightDtype(name, int(size), storage)
    for name, size, storage in zip(_WORDS[::3], _WORDS[1::3], _WORDS[2::3], strict=True)
}
STORAGE_DTYPES: dict[str, LightDtype] = {d.storage: d for d in DTYPES.values()}


class Size(tuple):
    """`torch.Size`: a tuple that pickles as `torch.Size((...))`."""

    __slots__ = ()

    def __reduce__(self):
        return (Size, (tuple(self),))


class StorageClass:
    """A legacy storage class (`torch.FloatStorage`), as named by an archive's persistent ids."""

    def __init__(self, name: str, dtype: LightDtype) -> None:
        self.name, self.dtype = name, dtype

    def __reduce__(self) -> str:
        return self.name


STORAGE_CLASSES = {name: StorageClass(name, dtype) for name, dtype in STORAGE_DTYPES.items()}


def rebuild_tensor_v2(*args):
    """Stands for `torch._utils._rebuild_tensor_v2` when pickling; never called."""
    raise NeedsTorch("a tensor cannot be rebuilt without torch")


# torch's pickles name `torch` from two distinct strings (a dtype's module as found in `sys.modules`, and
# `torch.Size.__module__`); the memo is by identity, so the stand-ins keep two distinct strings too.
_TORCH_FOR_DTYPES = "".join(("tor", "ch"))
_TORCH_FOR_SIZE = "".join(("tor", "ch"))
_NAMES: dict[int, tuple[object, str, str]] = {}  # id(stand-in) -> (stand-in, module, qualified name)


def register(obj: object, module: str, name: str) -> None:
    """`obj` pickles as the global `module.name` (a torch name) under `TorchNamePickler`."""
    _NAMES[id(obj)] = (obj, module, name)


for _dtype in DTYPES.values():
    register(_dtype, _TORCH_FOR_DTYPES, _dtype.name)
for _name, _cls in STORAGE_CLASSES.items():
    register(_cls, _TORCH_FOR_DTYPES, _name)
register(Size, _TORCH_FOR_SIZE, "Size")
register(rebuild_tensor_v2, "torch._utils", "_rebuild_tensor_v2")


class TorchNamePickler(pickle._Pickler):
    """The stdlib's pure-Python pickler, saving registered stand-ins as the torch globals they stand for
    (without importing torch to check them, which is all that differs from `pickle.Pickler`)."""

    def save_global(self, obj, name=None):
        entry = _NAMES.get(id(obj))
        if entry is None or entry[0] is not obj:
            return super().save_global(obj, name)
        _, module, qualname = entry
        if self.proto >= 4:
            self.save(module)
            self.save(qualname)
            self.write(pickle.STACK_GLOBAL)
        else:
            self.write(pickle.GLOBAL + module.encode("utf-8") + b"\n" + qualname.encode("utf-8") + b"\n")
        self.memoize(obj)

    dispatch = pickle._Pickler.dispatch.copy()
    dispatch[types.FunctionType] = save_global  # the base table holds the base class's save_global
