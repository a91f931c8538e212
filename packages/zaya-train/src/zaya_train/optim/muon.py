"""Muon: momentum orthogonalised by a Newton-Schulz iteration, for 2-D weight matrices (Jordan et al. 2024).

Parameters that are not matrices (embeddings, norms, biases, router vectors, conv kernels) take an AdamW
step inside the same optimizer, so one object, one state dict and one learning rate serve the model: the
Muon update is scaled by `rms_scale * sqrt(max(rows, cols))`, which gives it the RMS of a typical AdamW
update (Liu et al. 2025, "Muon is scalable for LLM training"), so the AdamW learning rate carries over.

Cost is what this module is about. Newton-Schulz on one 2048 x 4096 matrix is ~0.43 TFLOP (5 steps), and
ZAYA1 has 32 such expert matrices per layer, so:
- matrices of the same shape (the stacked experts, the same projection of every layer) are orthogonalised
  together as one batched bf16 matmul chain (`baddbmm`, no elementwise kernels, the Gram matrix on the
  smaller side so no stack is transposed), in rounds of at most `ns_round_elements` elements to bound the
  temporary memory (many small matrices, like the 128 x 2 conv kernels, go in one round); optionally compiled;
- under data parallelism the work is divided among the ranks and the results gathered, so each rank does
  1/N of it (as distributed Muon implementations do): under DDP each rank takes its share of every round and
  an all-gather returns the rest; under FSDP2 a stacked parameter sharded on dim 0 holds whole matrices, so
  each rank orthogonalises its own experts with no communication, and 2-D matrices are gathered, shared out
  the same way, and each rank keeps its rows; under ZeRO-1 each rank steps only the parameters it owns
  (`shard_work=False` for the per-rank optimizer).
- the update is computed in place in `p.grad` (consumed by the step), so no per-parameter copy is made.
"""

import math
from collections import defaultdict
from collections.abc import Callable, Iterable
from typing import Any

import torch
import torch.distributed as dist
from torch.optim import Optimizer

# Quintic coefficients tuned for speed over exactness: singular values land in about [0.7, 1.2].
QUINTIC = (3.4445, -4.7750, 2.0315)
# The classical cubic iteration converges to the exact polar factor U V^T (slowly).
CUBIC = (1.5, -0.5, 0.0)


def _newton_schulz_3d(
    x: torch.Tensor, steps: int, coefficients: tuple[float, float, float], eps: float = 1e-7
) -> torch.Tensor:
    """The iteration on a stack [n, rows, cols], in x's dtype, with the Gram matrix on the smaller side.

    Wide (rows <= cols): X <- a X + (b G + c G^2) X with G = X X^T. Tall: the same iteration on X^T written
    without transposing, X <- a X + X (b G + c G^2) with G = X^T X, so no copy of the stack is ever made."""
    a, b, c = coefficients
    x = x / (x.norm(dim=(-2, -1), keepdim=True) + eps)  # spectral norm <= Frobenius norm <= 1
    tall = x.size(-2) > x.size(-1)
    for _ in range(steps):
        gram = torch.bmm(x.mT, x) if tall else torch.bmm(x, x.mT)
        poly = torch.baddbmm(gram, gram, gram, beta=b, alpha=c)  # b * G + c * G @ G
        x = torch.baddbmm(x, x, poly, beta=a) if tall else torch.baddbmm(x, poly, x, beta=a)
    return x


def newton_schulz(
    g: torch.Tensor,
    steps: int = 5,
    coefficients: tuple[float, float, float] = QUINTIC,
    eps: float = 1e-7,
    kernel: Callable[..., torch.Tensor] = _newton_schulz_3d,
) -> torch.Tensor:
    """Approximate U V^T of the SVD G = U S V^T over the last two dims (bf16 on CUDA, fp32 on CPU)."""
    dtype = torch.bfloat16 if g.is_cuda else torch.float32
    x = kernel(g.to(dtype).reshape(-1, g.shape[-2], g.shape[-1]), steps, coefficients, eps)
    return x.reshape(g.shape).to(g.dtype)


def _local(tensors: list[torch.Tensor]) -> list[torch.Tensor]:
    """The local tensors of DTensors (in place views), plain tensors as they are: the elementwise steps run on
    them, so one foreach call takes parameters of every mesh (expert parallelism mixes them) and plain ones."""
    return [t.to_local() if hasattr(t, "to_local") else t for t in tensors]


def _whole_matrices(placement: Any) -> bool:
    """A placement that leaves every matrix of a stack whole: replicated, or cut along the stack's dim 0 (Shard(0),
    and the strided dim-0 shards FSDP2 makes of an EP shard)."""
    return placement.is_replicate() or (getattr(placement, "dim", None) == 0 and not placement.is_partial())


def _mesh_group(mesh: Any) -> Any:
    """The process group over every rank of `mesh`: its group (1-D), or the world's when the mesh spans it (HSDP's
    replicate x shard mesh, whose ranks all hold the gathered matrix)."""
    if mesh.ndim == 1:
        return mesh.get_group()
    if mesh.size() != dist.get_world_size():
        raise ValueError(f"Muon shares gathered matrices over a 1-D mesh or the whole world, not {mesh}")
    return dist.group.WORLD


def _matrices(t: torch.Tensor) -> torch.Tensor:
    """View a matrix or a stack of them as [n, rows, cols]."""
    return t.view(-1, t.shape[-2], t.shape[-1])


class _Work:
    """The matrices of one step grouped by shape, as the stacks [n, rows, cols] they come in (views to overwrite
    with their orthogonal factors). Kept as stacks, not split into matrices: 8 layers have ~10k matrices (the
    conv kernels), and a view per matrix cost ~80 ms of host time per step on the H200."""

    def __init__(self) -> None:
        self.by_shape: dict[tuple[int, int], list[torch.Tensor]] = defaultdict(list)
        self.group: Any = None  # process group the shape buckets are shared over (None: this rank does all)
        self.finish: list[Callable[[], None]] = []  # copies back into DTensor shards after the iteration

    def add(self, mats: torch.Tensor) -> None:
        self.by_shape[(mats.shape[-2], mats.shape[-1])].append(mats)


def _matrix_range(stacks: list[torch.Tensor], start: int, stop: int) -> list[torch.Tensor]:
    """Views covering matrices [start, stop) of the stacks laid end to end (a slice of each stack touched)."""
    views, offset = [], 0
    for stack in stacks:
        lo, hi = max(start - offset, 0), min(stop - offset, stack.shape[0])
        if lo < hi:
            views.append(stack[lo:hi])
        offset += stack.shape[0]
        if offset >= stop:
            break
    return views


class Muon(Optimizer):
    """Muon for groups with `use_muon=True`, AdamW for the others; decoupled weight decay in both."""

    def __init__(
        self,
        params: Iterable[Any],
        lr: float = 1e-3,
        weight_decay: float = 0.0,
        momentum: float = 0.95,
        nesterov: bool = True,
        ns_steps: int = 5,
        rms_scale: float = 0.2,
        betas: tuple[float, float] = (0.9, 0.95),
        eps: float = 1e-8,
        use_muon: bool = False,
        *,
        shard_work: bool = True,
        ns_round_elements: int = 1 << 27,
        compile_ns: bool = False,
    ) -> None:
        defaults = dict(
            lr=lr,
            weight_decay=weight_decay,
            momentum=momentum,
            nesterov=nesterov,
            ns_steps=ns_steps,
            rms_scale=rms_scale,
            betas=tuple(betas),
            eps=eps,
            use_muon=use_muon,
        )
        super().__init__(params, defaults)
        self.shard_work = shard_work
        self.ns_round_elements = ns_round_elements
        self.ns_matrices = 0
        self._kernel: Callable[..., torch.Tensor] = _newton_schulz_3d
        if compile_ns:
            self._kernel = torch.compile(_newton_schulz_3d, dynamic=True)

    @torch.no_grad()
    def step(self, closure: Any = None) -> Any:  # type: ignore[override]
        """One update of every parameter that has a gradient."""
        loss = None
        self.ns_matrices = 0  # matrices this rank orthogonalised in this step (the work sharing, observable)
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            params = [p for p in group["params"] if p.grad is not None]
            if not params:
                continue
            if group["use_muon"]:
                self._muon_step(params, group)
            else:
                self._adamw_step(params, group)
        return loss

    # ------------------------------------------------------------------ Muon
    def _muon_step(self, params: list[torch.Tensor], group: dict[str, Any]) -> None:
        bufs = []
        for p in params:
            state = self.state[p]
            if "momentum_buffer" not in state:
                state["momentum_buffer"] = torch.zeros_like(p)
            bufs.append(state["momentum_buffer"])
        grads = [p.grad for p in params]
        local_grads, local_bufs, local_params = _local(grads), _local(bufs), _local(params)
        torch._foreach_lerp_(local_bufs, local_grads, 1.0 - group["momentum"])
        if group["nesterov"]:
            torch._foreach_lerp_(local_grads, local_bufs, group["momentum"])  # the update, in place of the gradient
        else:
            torch._foreach_copy_(local_grads, local_bufs)
        self._orthogonalise(grads, group["ns_steps"])
        scales = [-group["lr"] * group["rms_scale"] * math.sqrt(max(p.shape[-2], p.shape[-1])) for p in params]
        torch._foreach_mul_(local_grads, scales)
        torch._foreach_mul_(local_params, 1.0 - group["lr"] * group["weight_decay"])
        torch._foreach_add_(local_params, local_grads)

    def _orthogonalise(self, updates: list[torch.Tensor], steps: int) -> None:
        """Replace every update by its Newton-Schulz orthogonal factor, matrix by matrix, in place."""
        from torch.distributed.tensor import DTensor, distribute_tensor

        local_work, shared_work = _Work(), _Work()
        if self.shard_work and dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1:
            shared_work.group = dist.group.WORLD
        for u in updates:
            if not isinstance(u, DTensor):
                (shared_work if shared_work.group is not None else local_work).add(_matrices(u))
            elif u.ndim >= 3 and all(_whole_matrices(pl) for pl in u.placements):
                # whole matrices in every shard (FSDP2's expert stacks, EP's experts, both): no communication
                local_work.add(_matrices(u.to_local()))
            else:  # a sharded 2-D matrix: gather it, share the iteration out, keep this rank's rows
                full = u.full_tensor()
                shared_work.group = _mesh_group(u.device_mesh)
                shared_work.add(_matrices(full))

                def keep_my_rows(u: DTensor = u, full: torch.Tensor = full) -> None:
                    mine = distribute_tensor(full, u.device_mesh, u.placements, src_data_rank=None)
                    u.to_local().copy_(mine.to_local())

                shared_work.finish.append(keep_my_rows)
        self._run(local_work, steps)
        self._run(shared_work, steps)
        for finish in shared_work.finish:
            finish()

    def _run(self, work: _Work, steps: int) -> None:
        """Orthogonalise `work`'s matrices, shape by shape, in rounds; with a group, each rank takes a share.

        Shares rotate from round to round (the rank that takes a round's first share moves on by the round's
        size), so shapes with a single matrix do not all land on rank 0."""
        rank, world = 0, 1
        if work.group is not None:
            rank, world = dist.get_rank(work.group), dist.get_world_size(work.group)
        rotation = 0
        for stacks in work.by_shape.values():
            rows, cols = stacks[0].shape[-2:]
            total = sum(stack.shape[0] for stack in stacks)
            per_round = max(1, self.ns_round_elements // (rows * cols)) * world
            for start in range(0, total, per_round):
                n = min(per_round, total - start)
                share = math.ceil(n / world)
                slot = (rank - rotation) % world
                lo, hi = start + min(slot * share, n), start + min((slot + 1) * share, n)
                mine = _matrix_range(stacks, lo, hi)
                self.ns_matrices += hi - lo
                stack = torch.cat(mine) if mine else stacks[0].new_zeros((0, rows, cols))
                if hi - lo < share:  # every rank passes the same shape to the all-gather
                    stack = torch.cat((stack, stack.new_zeros((share - (hi - lo), rows, cols))))
                ortho = newton_schulz(stack, steps, kernel=self._kernel)
                if world > 1:
                    pieces = [torch.empty_like(ortho) for _ in range(world)]
                    dist.all_gather(pieces, ortho.contiguous(), group=work.group)
                    ortho = torch.cat([pieces[(s + rotation) % world] for s in range(world)])
                views = _matrix_range(stacks, start, start + n)
                torch._foreach_copy_(views, list(ortho[:n].split([v.shape[0] for v in views])))
                rotation += n

    # ------------------------------------------------------------------ AdamW
    def _adamw_step(self, params: list[torch.Tensor], group: dict[str, Any]) -> None:
        """torch AdamW's arithmetic, with foreach kernels over the parameters that share a step count."""
        by_step: dict[int, list[torch.Tensor]] = defaultdict(list)
        for p in params:
            state = self.state[p]
            if "step" not in state:
                state["step"] = torch.zeros((), dtype=torch.float32)
                state["exp_avg"] = torch.zeros_like(p)
                state["exp_avg_sq"] = torch.zeros_like(p)
            state["step"] += 1
            by_step[int(state["step"])].append(p)
        beta1, beta2 = group["betas"]
        lr, wd = group["lr"], group["weight_decay"]
        for step, ps in by_step.items():
            grads = _local([p.grad for p in ps])
            exp_avgs = _local([self.state[p]["exp_avg"] for p in ps])
            exp_avg_sqs = _local([self.state[p]["exp_avg_sq"] for p in ps])
            ps = _local(ps)
            torch._foreach_lerp_(exp_avgs, grads, 1.0 - beta1)
            torch._foreach_mul_(exp_avg_sqs, beta2)
            torch._foreach_addcmul_(exp_avg_sqs, grads, grads, value=1.0 - beta2)
            denom = torch._foreach_div(exp_avg_sqs, 1.0 - beta2**step)
            torch._foreach_sqrt_(denom)
            torch._foreach_add_(denom, group["eps"])
            torch._foreach_mul_(ps, 1.0 - lr * wd)
            torch._foreach_addcdiv_(ps, exp_avgs, denom, value=-lr / (1.0 - beta1**step))
