"""SwiGLU experts with sorted dispatch: tokens are sorted by expert and run as grouped matmuls.

Weights are stacked with the global expert id on dim 0 (`gate_up` [E, 2F, D], gate rows first, then up;
`down` [E, D, F]), the HF layout, so expert parallelism is a slice on dim 0.

Dispatch: the N = T*k (token, slot) pairs are sorted by class id; the skip class (id E) sorts last and
is never computed. Two backends:
- `grouped_mm`: torch's grouped GEMM (`torch._grouped_mm`, CUTLASS on Hopper) on the sorted rows with the
  per-expert end offsets; no host sync, so it stays inside one compiled graph. Rows past the last offset
  (skipped pairs) are undefined in the kernel's output and input-gradient, so they are masked to zero on
  the way in and out.
- `loop`: one matmul per expert over its contiguous slice (one host sync for the counts).
Results are put back in token order with an index copy (no atomics) and summed over the k slots.
Under expert parallelism (`expert_parallel`, set by `ZayaForCausalLM.set_expert_parallel`) the weights are
this rank's E / ep experts and the routed pairs travel to their experts' ranks and back by all-to-all
(expert_parallel.py); the skipped pairs stay here, as zeros.

Decoding (`forward_decode`) has a third path for a few pairs, `forward_gathered`: each pair reads its
expert's weights through the expert index (`gate_up[ids]`), written as multiply-and-sum so that
torch.compile fuses the gather into the reduction and reads just the chosen experts, with fixed shapes and
no host sync. With N pairs it reads N experts, which for N <= `DECODE_GATHER_MAX_PAIRS` is about the
E (1 - (1 - 1/E)^N) distinct ones the grouped GEMM would read; larger batches take the grouped GEMM.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from zaya_model.config import ZayaConfig
from zaya_model.expert_parallel import ExpertParallel, dispatch_and_combine

DECODE_GATHER_MAX_PAIRS = 8
_grouped_mm = getattr(F, "grouped_mm", None) or getattr(torch, "_grouped_mm", None)
# Filled by the first eager call, so compiled graphs read a constant instead of querying the driver.
_CUDA_MAJOR: dict[int, int] = {}


def grouped_mm_available(device: torch.device, dtype: torch.dtype) -> bool:
    """Whether torch's grouped GEMM runs here: bf16 on CUDA sm90+, or on a CPU build that implements it.

    (CPU eager also takes fp32, but the op's compile-time shape function insists on bf16.)
    """
    if _grouped_mm is None:
        return False
    if dtype != torch.bfloat16:
        return False
    if device.type == "cuda":
        index = device.index if device.index is not None else torch.cuda.current_device()
        if index not in _CUDA_MAJOR:
            _CUDA_MAJOR[index] = torch.cuda.get_device_capability(index)[0]
        return _CUDA_MAJOR[index] >= 9
    if device.type == "cpu":
        return tuple(int(p) for p in torch.__version__.split(".")[:2]) >= (2, 10)
    return False


class ZayaExperts(nn.Module):
    """E SwiGLU experts: out = down(silu(gate(x)) * up(x))."""

    def __init__(self, config: ZayaConfig) -> None:
        super().__init__()
        E, F_, D = config.num_experts, config.moe_intermediate_size, config.hidden_size
        self.num_experts = E
        self.backend = config.moe_backend
        self.gate_up = nn.Parameter(torch.empty(E, 2 * F_, D))
        self.down = nn.Parameter(torch.empty(E, D, F_))
        self.expert_parallel: ExpertParallel | None = None

    def local_weights(self) -> tuple[torch.Tensor, torch.Tensor]:
        """(gate_up, down) as plain tensors: this rank's experts when they are a DTensor's shard (EP), else all."""
        return tuple(w.to_local() if hasattr(w, "to_local") else w for w in (self.gate_up, self.down))  # type: ignore[return-value]

    def _compute_dtype(self, x: torch.Tensor) -> torch.dtype:
        if torch.is_autocast_enabled(x.device.type):
            return torch.get_autocast_dtype(x.device.type)
        return x.dtype

    def resolve_backend(self, x: torch.Tensor) -> str:
        if self.backend != "auto":
            return self.backend
        return "grouped_mm" if grouped_mm_available(x.device, self._compute_dtype(x)) else "loop"

    def forward(self, x_TD: torch.Tensor, choice_Nk: torch.Tensor, weight_Nk: torch.Tensor) -> torch.Tensor:
        """x [T, D], class ids [T, k] (E = skip), weights [T, k] -> [T, D] in the compute dtype."""
        T, k = choice_Nk.shape
        E = self.num_experts
        dtype = self._compute_dtype(x_TD)
        ids = choice_Nk.reshape(-1)
        order = torch.argsort(ids, stable=True)
        counts = torch.zeros(E + 1, dtype=torch.int64, device=ids.device).index_add_(0, ids, torch.ones_like(ids))
        x_sorted = x_TD.to(dtype)[order // k]
        w_gu, w_dn = (w.to(dtype) for w in self.local_weights())
        grouped = self.resolve_backend(x_TD) == "grouped_mm"
        if self.expert_parallel is not None:
            y_sorted = self._expert_parallel(x_sorted, order, counts, w_gu, w_dn, grouped)
        elif grouped:
            y_sorted = self._grouped(x_sorted, counts, w_gu, w_dn)
        else:
            y_sorted = self._loop(x_sorted, counts.tolist(), w_gu, w_dn)
        y_sorted = y_sorted * weight_Nk.reshape(-1)[order, None].to(dtype)
        y = torch.empty_like(y_sorted).index_copy_(0, order, y_sorted)
        return y.view(T, k, -1).sum(dim=1) if k > 1 else y

    def forward_decode(
        self,
        x_TD: torch.Tensor,
        choice_Tk: torch.Tensor,
        weight_Tk: torch.Tensor,
        gather_max_pairs: int = DECODE_GATHER_MAX_PAIRS,
    ) -> torch.Tensor:
        """The decoding dispatch: gathered for up to `gather_max_pairs` pairs (or without the grouped GEMM),
        else grouped; never the loop backend, whose host sync would stall (and break CUDA-graph capture).

        Uncompiled, the gather copies the chosen experts' weights before reading them; eager decoders pass
        0 so that the grouped GEMM, where it runs, reads them in place."""
        if self.expert_parallel is not None:  # every rank of the EP group decodes in step, through its experts
            return self(x_TD, choice_Tk, weight_Tk)
        if choice_Tk.numel() <= gather_max_pairs or self.resolve_backend(x_TD) != "grouped_mm":
            return self.forward_gathered(x_TD, choice_Tk, weight_Tk)
        return self(x_TD, choice_Tk, weight_Tk)

    def forward_gathered(self, x_TD: torch.Tensor, choice_Tk: torch.Tensor, weight_Tk: torch.Tensor) -> torch.Tensor:
        """x [T, D], class ids [T, k], weights [T, k] -> [T, D]: each pair reads its expert's weights.

        Products and sums in fp32 (as a GEMM accumulates), rounded to the compute dtype where the grouped
        path rounds. A skipped pair reads expert E - 1 and is weighted 0."""
        T, k = choice_Tk.shape
        dtype = self._compute_dtype(x_TD)
        ids = choice_Tk.reshape(-1).clamp(max=self.num_experts - 1)
        x_ND = x_TD.to(dtype).repeat_interleave(k, dim=0) if k > 1 else x_TD.to(dtype)
        h = (self.gate_up[ids].to(dtype).float() * x_ND.float()[:, None, :]).sum(-1).to(dtype)
        gate, up = h.chunk(2, dim=-1)
        act = F.silu(gate) * up
        y = (self.down[ids].to(dtype).float() * act.float()[:, None, :]).sum(-1).to(dtype)
        y = y * weight_Tk.reshape(-1, 1).to(dtype)
        return y.view(T, k, -1).sum(dim=1) if k > 1 else y

    def _expert_parallel(
        self,
        x_ND: torch.Tensor,
        order: torch.Tensor,
        counts: torch.Tensor,
        w_gu: torch.Tensor,
        w_dn: torch.Tensor,
        grouped: bool,
    ) -> torch.Tensor:
        """Sorted outputs [N, D] under EP: the routed pairs through their experts' ranks, then zeros (skipped).

        Host-read split sizes and collectives: `set_expert_parallel` puts it under `torch.compiler.disable`, so
        a compiled block runs it eagerly between its graphs."""

        def compute(x_MD: torch.Tensor, local_counts: list[int]) -> torch.Tensor:
            if grouped:
                return self._grouped(x_MD, torch.tensor(local_counts, device=x_MD.device), w_gu, w_dn)
            return self._loop(x_MD, local_counts, w_gu, w_dn)

        y_routed = dispatch_and_combine(x_ND, order, counts, self.expert_parallel, compute)
        skipped = x_ND.new_zeros((x_ND.shape[0] - y_routed.shape[0], w_dn.shape[1]))
        return torch.cat((y_routed, skipped))

    def _grouped(
        self, x_ND: torch.Tensor, counts: torch.Tensor, w_gu: torch.Tensor, w_dn: torch.Tensor
    ) -> torch.Tensor:
        """Rows grouped by expert (counts per expert of `w_*`; rows past them, the skipped pairs, are zero)."""
        offsets = torch.cumsum(counts[: w_gu.shape[0]], dim=0).to(torch.int32)
        routed = (torch.arange(x_ND.shape[0], device=x_ND.device) < offsets[-1])[:, None]
        x_ND = torch.where(routed, x_ND, 0.0)
        h = _grouped_mm(x_ND, w_gu.transpose(-2, -1), offs=offsets)
        gate, up = h.chunk(2, dim=-1)
        y = _grouped_mm(F.silu(gate) * up, w_dn.transpose(-2, -1), offs=offsets)
        return torch.where(routed, y, 0.0)

    def _loop(self, x_ND: torch.Tensor, counts: list[int], w_gu: torch.Tensor, w_dn: torch.Tensor) -> torch.Tensor:
        """`_grouped` with one matmul per expert (host counts)."""
        outputs = []
        for e, chunk in enumerate(x_ND.split(counts)):
            if e >= w_gu.shape[0]:  # skipped pairs: no compute
                outputs.append(torch.zeros_like(chunk))
                continue
            gate, up = (chunk @ w_gu[e].T).chunk(2, dim=-1)
            outputs.append((F.silu(gate) * up) @ w_dn[e].T)
        return torch.cat(outputs)
