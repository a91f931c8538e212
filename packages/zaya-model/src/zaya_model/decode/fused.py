"""`FusedDecodeLayers`: every layer of one decode step as seven or eight Triton launches (`kernels.py`).

`ZayaDecoder(kernels="triton")` runs its layers through this instead of the per-layer torch functions: the
same function of the same static cache (keys, values, conv state and delayed value written in place at the
cache's `length` slot), on scratch buffers allocated once, so the step records in a CUDA graph. Top-1 routing
only (ZAYA1's setting). On a CPU the kernels run under Triton's interpreter (`TRITON_INTERPRET=1`, set before
Triton is imported): slow, but the same kernel code, which is how the tests check them without a GPU.
On Hopper and later each kernel is launched with programmatic dependent launch: it starts while the previous
one runs, loads its weights, then waits for the previous kernel's results (BENCHMARKS.md measures the gain).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch

from zaya_model.decode.static_cache import ZayaStaticCache
from zaya_model.errors import ZayaModelError

if TYPE_CHECKING:
    from zaya_model.model import ZayaForCausalLM


# Launch shapes and plan options (benchmarks/tune_fused_decode.py measures alternatives against these defaults:
# both options on, with the launch shapes the 4-layer tuning preferred; BENCHMARKS.md): the weight elements a
# GEMV program loads at once, output channels per CCA program, cache slots per attention program, the router's programs (each holds 1/programs of its MLP's rows),
# warps per program of each kernel; router_with_down: the router's down-projection inside the router kernel
# (one launch fewer, one more grid barrier); expert_prefetch: the expert down-projection reads the choice and
# loads its weights while the gate/up GEMV runs (PDL only); pdl: programmatic dependent launch where supported.
TUNING: dict[str, int] = {
    "gemv_tile": 4096,
    "gemv_warps": 8,
    "cca_block_o": 16,
    "cca_warps": 4,
    "attention_block_s": 32,
    "attention_warps": 4,
    "router_programs": 64,
    "router_warps": 8,
    "router_with_down": 1,
    "expert_prefetch": 1,
    "pdl": 1,
}
# Under Triton's interpreter programs run one after another, each at a large fixed cost: few programs (but
# more than one wherever a kernel splits work, so the splitting is checked), and one router program (its grid
# barrier waits for programs that would never run). sms: the SMs a GEMV spreads its output rows over (2: two
# programs a row, the fewest that still split).
INTERPRETER_TUNING: dict[str, int] = {
    "gemv_tile": 1 << 14, "cca_block_o": 8, "attention_block_s": 8, "router_programs": 1, "sms": 2,
    "gemv_warps": 1, "cca_warps": 1, "attention_warps": 1, "router_warps": 1, "pdl": 0,
}  # fmt: skip


def _pow2(n: int) -> int:
    return 1 << max(0, int(n) - 1).bit_length()


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def _interpreting() -> bool:
    return os.environ.get("TRITON_INTERPRET") == "1"


def check_fused_support(model: ZayaForCausalLM, device: torch.device | None) -> None:
    """Raise a one-line ZayaModelError unless the fused kernels can run this model on this device (None: any)."""
    if device is not None and device.type != "cuda" and not _interpreting():
        raise ZayaModelError(
            f"kernels='triton' needs a CUDA device (the model is on {device}); on a CPU set TRITON_INTERPRET=1 "
            "before starting Python to run the kernels in Triton's interpreter, or use kernels='torch'"
        )
    try:
        import triton  # noqa: F401
    except ImportError as err:
        raise ZayaModelError(f"kernels='triton' needs the triton package ({err}); pip install triton") from err
    if model.config.num_experts_per_tok != 1:
        raise ZayaModelError(
            f"kernels='triton' implements top-1 routing; this model routes to "
            f"{model.config.num_experts_per_tok} experts per token: use kernels='torch'"
        )
    dtype = model.embed.weight.dtype
    for name, p in model.layers.named_parameters():
        if not p.is_contiguous() or p.dtype != dtype:
            raise ZayaModelError(
                f"kernels='triton' needs contiguous {dtype} weights; layers.{name} is {p.dtype}"
                f"{'' if p.is_contiguous() else ', not contiguous'}: call model.to(dtype) first"
            )


@dataclass(frozen=True)
class KernelLaunch:
    """One launch of the plan: `kernel[grid](*args, **meta)` (meta: constexprs, num_warps, launch_pdl)."""

    kernel: Any  # a triton.JITFunction (an interpreted function under TRITON_INTERPRET=1)
    grid: tuple[int, ...]
    args: tuple[Any, ...]
    meta: dict[str, Any]

    def __call__(self) -> None:
        self.kernel[self.grid](*self.args, **self.meta)


class FusedDecodeLayers:
    """The layers of `model` for one decode step of `cache`'s batch, as a fixed plan of kernel launches on
    buffers allocated here: fill `resid` (the fp32 residual stream [B, D]), `cos` and `sin` (RoPE of the
    step's positions [B, rotary_dim]), `run()`; `resid` then holds the last layer's output and the cache every
    layer's state. check_device=False builds the plan on any device (to compile it: `aot.compile_plan`)."""

    def __init__(self, model: ZayaForCausalLM, cache: ZayaStaticCache, *, check_device: bool = True) -> None:
        device = model.embed.weight.device
        check_fused_support(model, device if check_device else None)
        from zaya_model.decode import kernels  # Triton, imported only when asked for

        self.kernels = kernels
        self.model, self.cache = model, cache
        c = model.config
        B, dtype = cache.batch_size, model.embed.weight.dtype

        def empty(*shape: int, dtype: torch.dtype = dtype) -> torch.Tensor:
            return torch.zeros(shape, device=device, dtype=dtype)

        self.resid = empty(B, c.hidden_size, dtype=torch.float32)
        self.cos = empty(B, c.rotary_dim, dtype=torch.float32)
        self.sin = empty(B, c.rotary_dim, dtype=torch.float32)
        self.qkv = empty(B, c.q_size + 2 * c.kv_size)
        self.mixed = empty(B, c.q_size + c.kv_size)
        self.attention = empty(B, c.q_size)
        self.normed = empty(B, c.hidden_size)
        self.router_state = empty(B, c.router_hidden_size)
        self.router_hidden = empty(2, B, c.router_hidden_size, dtype=torch.float32)
        self.choice = empty(B, dtype=torch.int64)
        self.route_weight = empty(B, dtype=torch.float32)
        self.act = empty(B, c.moe_intermediate_size)
        self.valid = cache.valid.view(torch.uint8)  # the same memory, a dtype Triton loads plainly
        self.eps = torch.finfo(dtype).eps
        self.tuning = {**TUNING, **(INTERPRETER_TUNING if _interpreting() else {})}
        self.splits = _cdiv(cache.max_len, self.tuning["attention_block_s"])
        self.partial_acc = empty(B, c.num_attention_heads, self.splits, c.head_dim, dtype=torch.float32)
        self.partial_ml = empty(B, c.num_attention_heads, self.splits, 2, dtype=torch.float32)
        # per layer: the router's two barriers and its last-arrival counter, one per (row, query head) for attention
        self.counters = empty(c.num_hidden_layers, 3 + B * c.num_attention_heads, dtype=torch.int32)
        # the SMs a GEMV's programs spread over: the device's; a few when interpreted; else an H100/H200's
        if device.type == "cuda":
            self.sms = torch.cuda.get_device_properties(device).multi_processor_count
            self.pdl = bool(self.tuning["pdl"]) and torch.cuda.get_device_capability(device)[0] >= 9
        else:
            self.sms = self.tuning["sms"] if _interpreting() else 132
            self.pdl = bool(self.tuning["pdl"]) and not _interpreting()  # AOT builds (compile_plan) target sm_90
        self.plan: list[KernelLaunch] = [launch for i in range(c.num_hidden_layers) for launch in self._layer(i)]

    def _launch_options(self, kernel: str) -> dict[str, Any]:
        """Warps, and programmatic dependent launch on Hopper and later (each kernel loads its weights while the
        previous one finishes); the PDL constexpr tells the kernel to signal and wait."""
        return dict(
            num_warps=self.tuning[f"{kernel}_warps"], PDL=self.pdl, **({"launch_pdl": True} if self.pdl else {})
        )

    def run(self) -> None:
        """Every layer on `resid` (in place), every layer's state into the cache at its `length` slot."""
        self.counters.zero_()
        for launch in self.plan:
            launch()

    # ---------------------------------------------------------------- the plan
    def _gemv(
        self,
        x: torch.Tensor,
        weight: torch.Tensor,
        out: torch.Tensor,
        *,
        bias: torch.Tensor | None = None,
        norm: torch.Tensor | None = None,
        write_normed: bool = False,
        expert: bool = False,
        gate_up: bool = False,
        choice_ready: bool = False,
        release_after_wait: bool = False,
        residual: torch.nn.Module | None = None,
        depth: torch.Tensor | None = None,
    ) -> KernelLaunch:
        k, c = self.kernels, self.model.config
        N, K = (weight.shape[-2] // 2 if gate_up else weight.shape[-2]), weight.shape[-1]
        tile = self.tuning["gemv_tile"]
        block_k = min(_pow2(K), tile)
        block_n = max(1, min(tile // (block_k * (2 if gate_up else 1)), _pow2(_cdiv(N, self.sms))))
        epilogue = k.EPILOGUE_RESIDUAL if residual is not None else k.EPILOGUE_DEPTH if depth is not None else 0
        any_ = out  # stands in for the pointers an epilogue does not read
        scales = (
            (residual.branch_bias, residual.branch_scale, residual.residual_bias, residual.residual_scale)
            if residual is not None
            else (any_,) * 4
        )
        args = (
            x, weight, any_ if bias is None else bias, out, any_ if norm is None else norm, self.normed,
            self.choice, self.route_weight, self.resid if residual is not None else any_, *scales,
            any_ if depth is None else depth,
            x.stride(0), weight.stride(0) if expert else 0, out.stride(0), c.num_experts, c.rms_norm_eps,
        )  # fmt: skip
        meta = dict(
            N=N, K=K, NORM=norm is not None, WRITE_XN=write_normed, HAS_BIAS=bias is not None, EXPERT=expert,
            GATE_UP=gate_up, EPILOGUE=epilogue, BLOCK_N=block_n, BLOCK_K=block_k, CHOICE_READY=choice_ready, WAIT_FIRST=release_after_wait,
            **self._launch_options("gemv"),
        )  # fmt: skip
        return KernelLaunch(k.gemv_kernel, (self.cache.batch_size, _cdiv(N, block_n)), args, meta)

    def _layer(self, i: int) -> list[KernelLaunch]:
        layer, c, k, rows = self.model.layers[i], self.model.config, self.kernels, self.cache.batch_size
        attn, router, experts = layer.attn, layer.moe.router, layer.moe.experts
        keys, values, conv_state, delayed = self.cache.layer(i)
        slot, max_len = self.cache.length, self.cache.max_len
        H, KV, d, R = c.num_attention_heads, c.num_key_value_heads, c.head_dim, c.router_hidden_size
        block_o = min(self.tuning["cca_block_o"], _pow2(d))
        cca = KernelLaunch(
            k.cca_kernel,
            (rows, (H + KV) * _cdiv(d, block_o) + 1),
            (
                self.qkv, conv_state, delayed, attn.conv_depthwise_weight, attn.conv_depthwise_bias,
                attn.conv_grouped_weight, attn.conv_grouped_bias, self.mixed, values, slot, max_len,
            ),
            dict(
                H=H, KV=KV, D_HEAD=d, K0=c.cca_time0, K1=c.cca_time1, BLOCK_O=block_o, BLOCK_D=_pow2(d),
                BLOCK_K1=_pow2(c.cca_time1), BLOCK_V=_pow2(c.kv_size), **self._launch_options("cca"),
            ),
        )  # fmt: skip
        counters = self.counters[i]
        attention = KernelLaunch(
            k.attention_kernel,
            (rows, H, self.splits),
            (
                self.mixed, self.qkv, conv_state, attn.key_temperature, self.cos, self.sin, keys, values, self.valid,
                slot, self.partial_acc, self.partial_ml, counters[3:], self.attention, max_len, d**-0.5, self.eps,
            ),
            dict(
                H=H, KV=KV, D_HEAD=d, ROT=c.rotary_dim, P=c.cca_time0 - 1 + c.cca_time1 - 1, SPLITS=self.splits,
                BLOCK_S=self.tuning["attention_block_s"], BLOCK_D=_pow2(d), BLOCK_SPLITS=16,
                **self._launch_options("attention"),
            ),
        )  # fmt: skip
        with_down = bool(self.tuning["router_with_down"])
        prefetch = bool(self.tuning["expert_prefetch"]) and self.pdl
        programs = _cdiv(R, _pow2(_cdiv(R, self.tuning["router_programs"])))
        depth = router.depth_scale if i > 0 else None
        any_ = self.router_state  # stands in for the pointers a variant does not read
        route = KernelLaunch(
            k.router_kernel,
            (programs,),
            (
                self.resid, layer.moe_norm.weight, self.normed, router.down.weight, router.down.bias,
                any_ if depth is None else depth,
                self.router_state, router.norm.weight, router.fc1.weight, router.fc1.bias, router.fc2.weight,
                router.fc2.bias, router.out.weight, router.balancing_biases, self.router_hidden[0],
                self.router_hidden[1], counters, self.choice, self.route_weight, rows, c.hidden_size, R,
                c.num_experts + 1, c.num_experts, c.rms_norm_eps, router.norm.eps,
            ),
            dict(
                BLOCK_R=_pow2(R), BLOCK_C=_pow2(c.num_experts + 1), ROWS_PER=_cdiv(R, programs), PROGRAMS=programs,
                WITH_DOWN=with_down, DEPTH=depth is not None, BLOCK_DM=_pow2(c.hidden_size),
                XN_CHUNK=_pow2(_cdiv(c.hidden_size, programs)), **self._launch_options("router"),
            ),
        )  # fmt: skip
        router_down = self._gemv(
            self.resid, router.down.weight, self.router_state, bias=router.down.bias, norm=layer.moe_norm.weight,
            write_normed=True, depth=depth,
        )  # fmt: skip
        return [
            self._gemv(self.resid, attn.qkv.weight, self.qkv, bias=attn.qkv.bias, norm=layer.attn_norm.weight),
            cca,
            attention,
            self._gemv(self.attention, attn.out.weight, self.resid, bias=attn.out.bias, residual=layer.attn_residual),
            *([] if with_down else [router_down]),
            route,
            self._gemv(self.normed, experts.gate_up, self.act, expert=True, gate_up=True, release_after_wait=prefetch),
            self._gemv(
                self.act, experts.down, self.resid, expert=True, choice_ready=prefetch, residual=layer.moe_residual
            ),
        ]  # fmt: skip
