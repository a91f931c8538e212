"""MoE width study: over (num experts, expert width, top-k), training throughput against decode latency.

Without a quality model, tokens/s alone always favours the smallest model, so the front trades the
training throughput that says how well the hardware is used, model FLOP/s achieved (the same
tokens/s times the model's FLOPs per token; tile and wave losses of narrow experts lower it), against
decode latency; tokens/s and MFU are reported beside it.

Training: one step of `train_tokens_per_step` tokens; every GEMM of the forward pass is timed by the
estimator (experts at T k / E rows each, so many narrow experts pay tile and wave losses), attention
scores and values are added at the GEMM peak, and backward costs twice forward. Decode: one step at
batch B reads the dense weights, the experts the batch touches (E (1 - (1 - k/E)^B) per layer under
uniform routing), the KV cache and conv state (zaya_model.decode_bytes_per_token); its time is the
larger of that traffic at the bandwidth ceiling and its FLOPs at the compute ceiling. The Pareto
front keeps configs no other beats on both; the recommendation is the front's knee (the best worst-case
of throughput and latency, each normalised to the front's best).
"""

import dataclasses
from dataclasses import dataclass, field

from zaya_model import ZayaConfig, count_parameters, decode_bytes_per_token, flops_per_token
from zaya_model.accounting import attention_flops_per_token

from collbench.config import SizingConfig
from collbench.errors import CollbenchError
from collbench.sizing.estimator import HardwareEstimator


@dataclass
class MoECandidate:
    """One grid point and its estimates."""

    num_experts: int
    moe_intermediate_size: int
    num_experts_per_tok: int
    total_params: int
    active_params: int
    train_tokens_per_s: float
    train_tflops: float  # model FLOP/s achieved in training (the front's throughput axis)
    mfu: float
    decode_latency_ms: dict[int, float] = field(default_factory=dict)  # batch -> ms per step
    pareto: bool = False

    def latency(self, batch: int) -> float:
        """Decode step latency in ms at `batch`."""
        return self.decode_latency_ms[batch]

    def as_row(self, batches: list[int]) -> dict[str, object]:
        """Flat dict for the CSV."""
        row = {k: v for k, v in dataclasses.asdict(self).items() if k != "decode_latency_ms"}
        row.update({f"decode_ms_b{b}": self.decode_latency_ms[b] for b in batches})
        return row


def forward_gemms(cfg: ZayaConfig, tokens: int) -> list[tuple[int, int, int, int]]:
    """(M, N, K, count) of the forward pass's projection, expert and LM-head GEMMs for `tokens` tokens
    (experts at tokens x top-k / num_experts rows each, under uniform routing)."""
    d, q, kv, f = cfg.hidden_size, cfg.q_size, cfg.kv_size, cfg.moe_intermediate_size
    e, k = cfg.num_experts, cfg.num_experts_per_tok
    tpe = max(1, round(tokens * k / e))
    return [
        (tokens, q + 2 * kv, d, cfg.num_hidden_layers),
        (tokens, d, q, cfg.num_hidden_layers),
        (tpe, 2 * f, d, cfg.num_hidden_layers * e),
        (tpe, d, f, cfg.num_hidden_layers * e),
        (tokens, cfg.vocab_size, d, 1),
    ]


def train_step_parts_s(cfg: ZayaConfig, est: HardwareEstimator, tokens: int, seq_len: int) -> dict[str, float]:
    """The forward + backward step's analytic parts: `gemm_s` (GEMMs at the estimator's rates), `rest_s` (the
    model's other FLOPs at peak), `launches` (GEMM kernels, each paying `est.kernel_overhead_s`)."""
    gemms = forward_gemms(cfg, tokens)
    gemm_s = sum(n * 2.0 * m_ * n_ * k_ / est.gemm_flops_rate(m_, n_, k_) for m_, n_, k_, n in gemms if min(m_, n_, k_))
    timed_flops = sum(n * 2.0 * m_ * n_ * k_ for m_, n_, k_, n in gemms)
    rest = max(0.0, flops_per_token(cfg, seq_len, training=False) * tokens - timed_flops)
    launches = sum(n for m_, n_, k_, n in gemms if min(m_, n_, k_))
    return {"gemm_s": 3.0 * gemm_s, "rest_s": 3.0 * rest / est.peak_flops, "launches": 3.0 * launches}


def train_step_time_s(cfg: ZayaConfig, est: HardwareEstimator, tokens: int, seq_len: int) -> float:
    """Forward + backward seconds for one step of `tokens` tokens on one GPU.

    The projection, expert and LM-head GEMMs are timed by the estimator; the rest of the model's
    FLOPs (attention scores and values, router MLP, convolutions) run at the peak rate.
    """
    parts = train_step_parts_s(cfg, est, tokens, seq_len)
    return parts["gemm_s"] + parts["rest_s"] + parts["launches"] * est.kernel_overhead_s


def decode_step_flops(cfg: ZayaConfig, batch: int, context_len: int) -> float:
    """FLOPs of one decode step of `batch` sequences at `context_len` (weights plus attention to the cache)."""
    return batch * (
        2.0 * count_parameters(cfg).active_with_embeddings + attention_flops_per_token(cfg, context_len, causal=False)
    )


def decode_step_time_s(cfg: ZayaConfig, est: HardwareEstimator, batch: int, context_len: int) -> float:
    """Seconds for one decode step of `batch` sequences at `context_len` (memory- or compute-bound)."""
    traffic = decode_bytes_per_token(cfg, context_len, batch).total
    return max(est.memory_time_s(traffic), decode_step_flops(cfg, batch, context_len) / est.peak_flops)


def pareto_front(cands: list[MoECandidate], batch: int) -> list[MoECandidate]:
    """Candidates no other has both higher training FLOP/s and lower decode latency than; marks them."""
    front = []
    for c in cands:
        dominated = any(
            o.train_tflops >= c.train_tflops
            and o.latency(batch) <= c.latency(batch)
            and (o.train_tflops > c.train_tflops or o.latency(batch) < c.latency(batch))
            for o in cands
        )
        c.pareto = not dominated
        if c.pareto:
            front.append(c)
    return sorted(front, key=lambda c: c.latency(batch))


def knee(front: list[MoECandidate], batch: int) -> MoECandidate:
    """The front point with the best worst-case of normalised throughput and normalised latency."""
    best_tflops = max(c.train_tflops for c in front)
    best_lat = min(c.latency(batch) for c in front)
    return max(front, key=lambda c: (min(c.train_tflops / best_tflops, best_lat / c.latency(batch)), c.train_tflops))


def expert_shapes(sizing: SizingConfig, base: ZayaConfig) -> list[tuple[int, int]]:
    """(num experts, expert width) pairs: at the base model's expert parameters when `iso_params`, else the grid."""
    if not sizing.iso_params:
        return [(e, f) for e in sizing.num_experts for f in sizing.expert_widths]
    budget = base.num_experts * base.moe_intermediate_size
    pairs = [(e, budget // e) for e in sizing.num_experts if budget % e == 0]
    if not pairs:
        raise CollbenchError(
            f"sizing.iso_params: no num_experts in {sizing.num_experts} divides the base model's "
            f"num_experts x moe_intermediate_size = {budget}; pick divisors or set iso_params=false"
        )
    return pairs


def grid_points(sizing: SizingConfig, base: ZayaConfig) -> list[tuple[int, int, int]]:
    """(num experts, expert width, top-k) of every candidate: at the base model's active expert width
    (top-k x width) when `iso_active_params`, else expert_shapes x top_k; top-k above the expert count is left out."""
    if sizing.iso_active_params:
        active = base.num_experts_per_tok * base.moe_intermediate_size
        ks = [k for k in sizing.top_k if active % k == 0]
        if not ks:
            raise CollbenchError(
                f"sizing.iso_active_params: no top_k in {sizing.top_k} divides the base model's "
                f"num_experts_per_tok x moe_intermediate_size = {active}; pick divisors"
            )
        return [(e, active // k, k) for e in sizing.num_experts for k in ks if k <= e]
    return [(e, f, k) for e, f in expert_shapes(sizing, base) for k in sizing.top_k if k <= e]


def candidate_config(base: ZayaConfig, point: tuple[int, int, int], **extra: object) -> ZayaConfig:
    """The base model with one grid point's MoE shape (and any `extra` field changes, e.g. fewer layers)."""
    e, f, k = point
    return dataclasses.replace(base, num_experts=e, moe_intermediate_size=f, num_experts_per_tok=k, **extra)


def run_moe_study(
    sizing: SizingConfig, base: ZayaConfig, est: HardwareEstimator
) -> tuple[list[MoECandidate], MoECandidate]:
    """Every grid point's estimates (Pareto points marked) and the recommended one."""
    if sizing.latency_batch not in sizing.decode_batches:
        raise CollbenchError(
            f"sizing.latency_batch={sizing.latency_batch} is not among sizing.decode_batches "
            f"{sizing.decode_batches}; add it there"
        )
    cands = []
    for point in grid_points(sizing, base):
        cfg = candidate_config(base, point)
        params = count_parameters(cfg)
        if sizing.max_total_params and params.total > sizing.max_total_params:
            continue
        step = train_step_time_s(cfg, est, sizing.train_tokens_per_step, sizing.seq_len)
        model_flops = flops_per_token(cfg, sizing.seq_len, training=True) * sizing.train_tokens_per_step
        cands.append(
            MoECandidate(
                num_experts=cfg.num_experts,
                moe_intermediate_size=cfg.moe_intermediate_size,
                num_experts_per_tok=cfg.num_experts_per_tok,
                total_params=params.total,
                active_params=params.active,
                train_tokens_per_s=sizing.train_tokens_per_step / step,
                train_tflops=model_flops / step / 1e12,
                mfu=model_flops / step / est.hw.peak_bf16_flops,
                decode_latency_ms={
                    b: 1e3 * decode_step_time_s(cfg, est, b, sizing.context_len) for b in sizing.decode_batches
                },
            )
        )
    if not cands:
        raise CollbenchError(
            f"no grid point fits sizing.max_total_params={sizing.max_total_params:g}; raise it or "
            "use fewer/narrower experts"
        )
    front = pareto_front(cands, sizing.latency_batch)
    return cands, knee(front, sizing.latency_batch)
