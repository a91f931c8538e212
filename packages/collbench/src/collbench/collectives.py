"""Collectives through torch.distributed, one rank's side: build buffers, check results, time the op.

Buffers follow nccl-tests' sizes (`busbw.py`): for S bytes of elements of e bytes on n ranks,
all-reduce and broadcast move one S buffer; all-gather gathers n chunks of S/(n e) elements into S;
reduce-scatter reduces S into one chunk per rank; all-to-all exchanges S/n per peer. In-place
variants alias the output with the input the way NCCL does (the rank's chunk of the big buffer);
torch has no out-of-place all-reduce or broadcast and no in-place all-to-all, so those are not run.

The correctness check fills inputs with small integers (exact in bf16 and int8 for <= 8 ranks),
runs the op once, and counts elements that differ from the closed-form result: nccl-tests' #wrong.
"""

from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.distributed as dist

from collbench.errors import CollbenchError

IN_PLACE_MODES: dict[str, tuple[bool, ...]] = {
    "all_reduce": (True,),
    "broadcast": (True,),
    "all_gather": (False, True),
    "reduce_scatter": (False, True),
    "all_to_all": (False,),
}
BACKEND_COLLECTIVES = {"gloo": tuple(IN_PLACE_MODES), "nccl": tuple(IN_PLACE_MODES)}


def check_backend_collective(backend: str, collective: str) -> None:
    """Raise a clear error for a collective the backend does not offer."""
    known = BACKEND_COLLECTIVES.get(backend)
    if known is None:
        raise CollbenchError(
            f"unknown torch.distributed backend {backend!r}; allowed: {', '.join(BACKEND_COLLECTIVES)}"
        )
    if collective not in known:
        raise CollbenchError(
            f"collective {collective!r} is not available with backend {backend!r}; allowed: "
            f"{', '.join(known)} (nccl-tests binaries offer more: use backend=nccl-tests)"
        )


@dataclass(frozen=True)
class CollectivePoint:
    """One measurement's coordinates."""

    collective: str
    dtype: str
    size_bytes: int
    n_ranks: int
    in_place: bool

    @property
    def key(self) -> tuple[str, str, int, int, bool]:
        """Hashable identity used to match per-rank results."""
        return (self.collective, self.dtype, self.size_bytes, self.n_ranks, self.in_place)


def element_count(point: CollectivePoint) -> int:
    """nccl-tests' `count` column: per-peer elements for the chunked ops, all elements otherwise."""
    numel = point.size_bytes // torch.empty((), dtype=getattr(torch, point.dtype)).element_size()
    return numel // point.n_ranks if point.collective in ("all_gather", "reduce_scatter", "all_to_all") else numel


def _pattern(rank: int, numel: int, offset: int, dtype: torch.dtype, device: torch.device) -> torch.Tensor:
    idx = torch.arange(offset, offset + numel, device=device)
    return ((rank + 1) + idx % 3).to(dtype)


class CollectiveOp:
    """Buffers and the call for one point on one rank of `group`."""

    def __init__(self, point: CollectivePoint, rank: int, group: dist.ProcessGroup, device: torch.device) -> None:
        self.point, self.rank, self.group, self.device = point, rank, group, device
        self.dtype = getattr(torch, point.dtype)
        n = point.n_ranks
        self.numel = point.size_bytes // torch.empty((), dtype=self.dtype).element_size() // n * n
        self.chunk = self.numel // n

    def build(self, fill: bool) -> tuple[Callable[[], object], torch.Tensor, torch.Tensor]:
        """(call, input, output); inputs hold the check pattern when `fill`, zeros otherwise."""
        p, r, _n, dev = self.point, self.rank, self.point.n_ranks, self.device
        if p.collective in ("all_reduce", "broadcast"):
            buf = (
                _pattern(r, self.numel, 0, self.dtype, dev)
                if fill
                else torch.zeros(self.numel, dtype=self.dtype, device=dev)
            )
            if p.collective == "all_reduce":
                return (lambda: dist.all_reduce(buf, group=self.group)), buf, buf
            src = dist.get_global_rank(self.group, 0) if self.group is not None else 0
            return (lambda: dist.broadcast(buf, src=src, group=self.group)), buf, buf
        if p.collective == "all_gather":
            out = torch.zeros(self.numel, dtype=self.dtype, device=dev)
            inp = (
                out[r * self.chunk : (r + 1) * self.chunk]
                if p.in_place
                else torch.empty(self.chunk, dtype=self.dtype, device=dev)
            )
            if fill:
                inp.copy_(_pattern(r, self.chunk, 0, self.dtype, dev))
            gather = getattr(dist, "all_gather_single", None) or dist.all_gather_into_tensor
            return (lambda: gather(out, inp, group=self.group)), inp, out
        if p.collective == "reduce_scatter":
            inp = (
                _pattern(r, self.numel, 0, self.dtype, dev)
                if fill
                else torch.zeros(self.numel, dtype=self.dtype, device=dev)
            )
            out = (
                inp[r * self.chunk : (r + 1) * self.chunk]
                if p.in_place
                else torch.zeros(self.chunk, dtype=self.dtype, device=dev)
            )
            scatter = getattr(dist, "reduce_scatter_single", None) or dist.reduce_scatter_tensor
            return (lambda: scatter(out, inp, group=self.group)), inp, out
        if p.collective == "all_to_all":
            inp = (
                _pattern(r, self.numel, 0, self.dtype, dev)
                if fill
                else torch.zeros(self.numel, dtype=self.dtype, device=dev)
            )
            out = torch.zeros(self.numel, dtype=self.dtype, device=dev)
            return (lambda: dist.all_to_all_single(out, inp, group=self.group)), inp, out
        raise CollbenchError(f"collective {p.collective!r} has no torch.distributed implementation here")

    def expected(self) -> torch.Tensor:
        """The closed-form result on this rank for pattern-filled inputs."""
        p, r, n, dev, m = self.point, self.rank, self.point.n_ranks, self.device, self.chunk
        f64 = torch.float64
        if p.collective == "all_reduce":
            return sum(_pattern(s, self.numel, 0, f64, dev) for s in range(n))
        if p.collective == "broadcast":
            return _pattern(0, self.numel, 0, f64, dev)
        if p.collective == "all_gather":
            return torch.cat([_pattern(s, m, 0, f64, dev) for s in range(n)])
        if p.collective == "reduce_scatter":
            return sum(_pattern(s, m, r * m, f64, dev) for s in range(n))
        return torch.cat([_pattern(s, m, r * m, f64, dev) for s in range(n)])  # all_to_all

    def count_wrong(self) -> int:
        """Run once on pattern inputs and count elements that differ from the expected result."""
        call, _inp, out = self.build(fill=True)
        call()
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)
        return int((out.to(torch.float64) != self.expected()).sum().item())
