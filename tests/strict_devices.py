"""Strict devices: every torch.distributed collective checked against NCCL's device rule, on a CPU (gloo) run.

A process group made with `backend="nccl"` serves CUDA tensors only (torch: `BackendConfig(Backend("nccl"))
.get_device_backend_map() == {"cuda": "nccl"}`); gloo serves CPU tensors too, so a gloo test never sees the
CPU tensor NCCL would reject. On a CPU run every tensor is a CPU tensor, so this mode tells the two kinds
apart by where the code put them (a TorchFunctionMode follows every tensor made while it is on):

- placed: made on a device the code named (`device=dev`, `.to(dev)`, `with torch.device(dev)`), or computed
  from a placed tensor: on a GPU run, the training device;
- host: made with no device (`torch.tensor([1])`, `torch.from_numpy`), put on the CPU by name (`.cpu()`,
  `device="cpu"`), or computed from host tensors only: on a GPU run, a CPU tensor.

A group serves placed tensors of the training device's type. It serves host tensors only when it was made for
the CPU: `dist.new_group(backend="gloo")`, or a device map naming cpu (`"cpu:gloo,cuda:nccl"`). The default
group made from a plain backend name, and every group made from it (DeviceMesh's, `new_group()` with no
backend), serve what NCCL's serve on a GPU: the training device only. A collective given a tensor its group
does not serve raises `StrictDeviceError` naming the collective, the tensor and the call site. Object
collectives (`broadcast_object_list`, ...) are valid on every group (torch moves their bytes to the group's
device) and are not checked; nor are the collectives torch's C++ side runs (DDP's reducer).

    with strict_devices("cpu") as strict:   # the training device; before the process group is made
        ...                                  # the run: it fails where a GPU run under NCCL would
    strict.checked                           # Counter: "all_reduce zaya_train....Resilience.judge" -> tensors
"""

import contextlib
import functools
import inspect
import sys
import weakref
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
from torch.overrides import TorchFunctionMode
from torch.utils._pytree import tree_flatten

# The host tensors, by id, each with a weak reference that drops its entry when the tensor goes: a mark kept
# beside the tensor, not on it, so it changes nothing the run writes (an attribute would make torch.save pickle
# every marked tensor with its Python state, which a checkpoint's restricted unpickler rightly refuses).
_HOST: dict[int, weakref.ref] = {}
# the tensor collectives of torch.distributed (the functions our code calls through `dist.`), those this torch has
COLLECTIVES = tuple(name for name in (
    "all_reduce", "all_gather", "all_gather_into_tensor", "all_gather_single", "reduce_scatter",
    "reduce_scatter_tensor", "reduce_scatter_single", "all_to_all", "all_to_all_single", "broadcast", "reduce",
    "gather", "scatter", "send", "recv", "isend", "irecv", "all_reduce_coalesced", "all_gather_coalesced",
    "batch_isend_irecv",
) if hasattr(dist, name))  # fmt: skip
_HOST_FACTORIES = ("from_numpy", "frombuffer")  # always the CPU; no TorchFunctionMode sees them, so wrapped
_FACTORIES = {
    torch.tensor, torch.as_tensor, torch.asarray, torch.scalar_tensor, torch.zeros, torch.ones, torch.empty,
    torch.full, torch.empty_strided, torch.arange, torch.linspace, torch.logspace, torch.eye, torch.rand,
    torch.randn, torch.randint, torch.randperm,
}  # fmt: skip


class StrictDeviceError(AssertionError):
    """A collective was given a tensor its group would not serve under NCCL."""


def is_host(tensor: torch.Tensor) -> bool:
    """Whether `tensor` would be a CPU tensor on a GPU run (see the module's docstring)."""
    ref = _HOST.get(id(tensor))
    return ref is not None and ref() is tensor


def _tensors(tree: Any) -> list[torch.Tensor]:
    return [leaf for leaf in tree_flatten(tree)[0] if isinstance(leaf, torch.Tensor)]


def _named_host(device: Any) -> bool:
    """A device argument that names the CPU as such (a string or `.cpu()`), not a torch.device object: on a CPU
    run the training device is `torch.device("cpu")`, so only the spelling tells the two apart."""
    return isinstance(device, str) and device.split(":")[0] == "cpu"


def _requested_device(func: Callable, args: tuple, kwargs: dict) -> tuple[bool, Any]:
    """(whether a device was asked for, the device or a tensor whose device it is)."""
    if kwargs.get("device") is not None:
        return True, kwargs["device"]
    if func is torch.Tensor.to:
        for arg in args[1:]:
            if isinstance(arg, str | torch.device | torch.Tensor):
                return True, arg
    return False, None


class _Placement(TorchFunctionMode):
    """Marks the host tensors (module docstring) as torch functions make them."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        result = func(*args, **kwargs)
        inputs = _tensors((args, kwargs))
        asked, device = _requested_device(func, args, kwargs)
        if func is torch.Tensor.cpu:
            host = True
        elif asked:
            host = is_host(device) if isinstance(device, torch.Tensor) else _named_host(device)
        elif inputs:
            host = all(is_host(t) for t in inputs)
        else:
            host = func in _FACTORIES
        if func in (torch.Tensor.to, torch.Tensor.cpu) and result is args[0] and is_host(result) != host:
            result = result.clone()  # a no-op move on the CPU is a copy between devices on a GPU
        if host:
            seen = {id(t) for t in inputs}
            _mark_host(*(out for out in _tensors(result) if id(out) not in seen))
        return result


def _mark_host(*tensors: torch.Tensor) -> None:
    for tensor in tensors:
        with contextlib.suppress(TypeError):  # a tensor that takes no weak reference stays unmarked
            key = id(tensor)
            _HOST[key] = weakref.ref(tensor, lambda _, key=key: _HOST.pop(key, None))


def _host_factory(factory: Callable) -> Callable:
    @functools.wraps(factory)
    def made_on_the_host(*args: Any, **kwargs: Any) -> torch.Tensor:
        tensor = factory(*args, **kwargs)
        _mark_host(tensor)
        return tensor

    return made_on_the_host


def _is_default(group: Any) -> bool:
    return group is None or group is dist.GroupMember.WORLD


def _names_cpu(backend: Any, default: bool) -> bool:
    """Whether a group made with `backend` has a CPU backend. A device map ("cpu:gloo,cuda:nccl") says so; a
    plain name on the default group is the training device's backend (our setup names gloo on a CPU where
    it names nccl on a GPU), on another group it is chosen for what it carries (gloo: the CPU)."""
    text = str(backend or "").lower()
    if ":" in text:
        return any(pair.split(":")[0].strip() == "cpu" for pair in text.split(","))
    return text == "gloo" and not default


def _caller() -> tuple[str, str]:
    """(file:line, module.function) of the code that called the collective: the first frame outside torch."""
    frame = sys._getframe(3)
    while frame.f_back is not None and frame.f_globals.get("__name__", "").startswith(("torch.", __name__)):
        frame = frame.f_back
    return f"{frame.f_code.co_filename}:{frame.f_lineno}", f"{frame.f_globals['__name__']}.{frame.f_code.co_qualname}"


class StrictDevices:
    """The checks of one `strict_devices` block: which groups serve host tensors, and what was checked."""

    def __init__(self, training: torch.device | str) -> None:
        self.training = torch.device(training).type
        self.default_serves_host = False
        self._cpu_groups: list[Any] = []  # the groups themselves (an id can be reused once a group is gone)
        self.checked: Counter[str] = Counter()  # "collective module.function" -> tensors checked

    def serves_host(self, group: Any) -> bool:
        """Whether `group` would carry CPU tensors on a GPU run."""
        if _is_default(group):
            return self.default_serves_host
        return any(group is made for made in self._cpu_groups)

    def made(self, group: Any, backend: Any) -> None:
        """`group` was made with `backend` (None: the default group's)."""
        if _names_cpu(backend, default=False) or (backend is None and self.default_serves_host):
            self._cpu_groups.append(group)

    def check(self, name: str, group: Any, tensor: torch.Tensor) -> None:
        """Raise StrictDeviceError when `group` would not serve `tensor` under NCCL's rule."""
        where, function = _caller()
        self.checked[f"{name} {function}"] += 1
        on = "the default group" if _is_default(group) else f"group {group!r}"
        if is_host(tensor) and not self.serves_host(group):
            raise StrictDeviceError(
                f"{name} at {where} got a tensor made without a device (on a GPU run, a CPU tensor) on {on}, which "
                f"serves only the training device's ({self.training}) as NCCL's serves only CUDA tensors; make it on "
                "the training device, or send it over a group made for the CPU (new_group(backend='gloo'))"
            )
        if tensor.device.type not in {self.training, "cpu" if self.serves_host(group) else self.training}:
            raise StrictDeviceError(
                f"{name} at {where} got a {tensor.device.type} tensor on {on}, which serves {self.training} "
                "tensors; move it to the training device"
            )


@contextlib.contextmanager
def strict_devices(training: torch.device | str) -> Iterator[StrictDevices]:
    """Check every collective's tensors against NCCL's device rule while the block runs (`training`: the
    training device); enter it before the process group is made, since it records how each group is made."""
    strict = StrictDevices(training)
    originals = {name: getattr(dist, name) for name in (*COLLECTIVES, "init_process_group", "new_group")}

    def checked(name: str) -> Callable:
        original = originals[name]
        signature = inspect.signature(original)

        @functools.wraps(original)
        def collective(*args: Any, **kwargs: Any) -> Any:
            if name == "batch_isend_irecv":
                for op in signature.bind(*args, **kwargs).arguments["p2p_op_list"]:
                    strict.check(name, op.group, op.tensor)
            else:
                bound = signature.bind(*args, **kwargs).arguments
                for tensor in _tensors({k: v for k, v in bound.items() if k != "group"}):
                    strict.check(name, bound.get("group"), tensor)
            return original(*args, **kwargs)

        return collective

    def init_process_group(*args: Any, **kwargs: Any) -> Any:
        backend = inspect.signature(originals["init_process_group"]).bind(*args, **kwargs).arguments.get("backend")
        strict.default_serves_host = _names_cpu(backend, default=True)
        return originals["init_process_group"](*args, **kwargs)

    def new_group(*args: Any, **kwargs: Any) -> Any:
        group = originals["new_group"](*args, **kwargs)
        strict.made(group, inspect.signature(originals["new_group"]).bind(*args, **kwargs).arguments.get("backend"))
        return group

    patched = {name: checked(name) for name in COLLECTIVES}
    patched.update(init_process_group=init_process_group, new_group=new_group)
    factories = {name: getattr(torch, name) for name in _HOST_FACTORIES}
    for name, fn in patched.items():
        setattr(dist, name, fn)
    for name, fn in factories.items():
        setattr(torch, name, _host_factory(fn))
    try:
        with _Placement():
            yield strict
    finally:
        for name, fn in originals.items():
            setattr(dist, name, fn)
        for name, fn in factories.items():
            setattr(torch, name, fn)


@contextlib.contextmanager
def one_rank_group(folder: Path, backend: str = "gloo") -> Iterator[None]:
    """A real default process group of world size 1 (a file store in `folder`), destroyed on exit: for
    checking collectives in the test's own process."""
    dist.init_process_group(backend, init_method=f"file://{folder / 'store'}", rank=0, world_size=1)
    try:
        yield
    finally:
        dist.destroy_process_group()
