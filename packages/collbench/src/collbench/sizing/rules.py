"""Dimension rules for attention and MLP/expert blocks that avoid tile and wave quantization losses.

Each rule states the constraint, the value the config has, whether it passes, and the nearest value
that does. Widths are chosen by the estimator (rules or measured tables) among tile multiples near
the requested one: the width with the lowest time per useful FLOP for the expert GEMMs at the
training step's tokens per expert.
"""

from dataclasses import asdict, dataclass

from zaya_model import ZayaConfig

from collbench.sizing.estimator import HardwareEstimator


@dataclass
class SizingRule:
    """One checked rule."""

    name: str
    value: int
    ok: bool
    recommended: int
    reason: str

    def as_row(self) -> dict[str, object]:
        """Plain dict for JSON."""
        return asdict(self)


def round_up(value: int, multiple: int) -> int:
    """Smallest multiple of `multiple` >= value."""
    return -(-value // multiple) * multiple


def expert_time_per_flop(est: HardwareEstimator, tokens_per_expert: int, hidden: int, width: int) -> float:
    """Seconds per useful FLOP of one expert's gated up- and down-projection (quantization and roofline only:
    the fixed kernel overhead would favour the widest candidate regardless of fit)."""
    up, down = (tokens_per_expert, 2 * width, hidden), (tokens_per_expert, hidden, width)
    t = sum(2.0 * m * n * k / est.gemm_flops_rate(m, n, k) for m, n, k in (up, down))
    return t / (2.0 * tokens_per_expert * 3 * width * hidden)


def best_expert_width(
    est: HardwareEstimator, target: int, tokens_per_expert: int, hidden: int, spread: float = 0.125
) -> int:
    """The tile-multiple width within +-spread of `target` with the lowest time per useful FLOP."""
    tile = est.hw.matmul_tile
    lo, hi = max(tile, round_up(int(target * (1 - spread)), tile)), round_up(int(target * (1 + spread)), tile)
    candidates = range(lo, hi + 1, tile)
    return min(
        candidates, key=lambda w: (round(expert_time_per_flop(est, tokens_per_expert, hidden, w), 18), abs(w - target))
    )


def dimension_rules(
    cfg: ZayaConfig, est: HardwareEstimator, tokens_per_expert: int, tensor_parallel: int = 1, tolerance: float = 0.05
) -> list[SizingRule]:
    """Check a model's dims against the hardware's matrix-unit and parallelism constraints; an expert width
    fails when a nearby tile multiple is more than `tolerance` faster per useful FLOP."""
    tile = est.hw.matmul_tile
    q, kv = cfg.num_attention_heads * cfg.head_dim, cfg.num_key_value_heads * cfg.head_dim
    rules = [
        SizingRule(
            "hidden_size % matmul_tile",
            cfg.hidden_size,
            cfg.hidden_size % tile == 0,
            round_up(cfg.hidden_size, tile),
            f"every projection has K or N = hidden_size; tile {tile}",
        ),
        SizingRule(
            "head_dim in (64, 128, 256)",
            cfg.head_dim,
            cfg.head_dim in (64, 128, 256),
            128 if cfg.head_dim > 96 else 64,
            "fused attention kernels are tuned for these head sizes",
        ),
        SizingRule(
            "q width % matmul_tile",
            q,
            q % tile == 0,
            round_up(q, tile),
            "num_attention_heads x head_dim is the N of the query projection",
        ),
        SizingRule(
            "kv width % matmul_tile",
            kv,
            kv % tile == 0,
            round_up(kv, tile),
            "num_key_value_heads x head_dim is the N of the key/value projections",
        ),
        SizingRule(
            "num_key_value_heads % tensor_parallel",
            cfg.num_key_value_heads,
            cfg.num_key_value_heads % tensor_parallel == 0,
            round_up(cfg.num_key_value_heads, tensor_parallel),
            "each TP rank holds whole KV heads",
        ),
        SizingRule(
            "vocab_size % 128",
            cfg.vocab_size,
            cfg.vocab_size % 128 == 0,
            round_up(cfg.vocab_size, 128),
            "the LM head's N; pad the vocabulary to a tile multiple",
        ),
    ]
    width = cfg.moe_intermediate_size
    best = best_expert_width(est, width, tokens_per_expert, cfg.hidden_size)
    same = expert_time_per_flop(est, tokens_per_expert, cfg.hidden_size, best) >= expert_time_per_flop(
        est, tokens_per_expert, cfg.hidden_size, width
    ) * (1 - tolerance)
    rules.append(
        SizingRule(
            "moe_intermediate_size (tile/wave)",
            width,
            width % tile == 0 and same,
            width if same and width % tile == 0 else best,
            f"expert GEMMs [{tokens_per_expert} x {2 * width} x {cfg.hidden_size}] and "
            f"[{tokens_per_expert} x {cfg.hidden_size} x {width}] on {est.hw.compute_units} units",
        )
    )
    return rules
