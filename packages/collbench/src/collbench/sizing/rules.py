"""Dimension rules for attention and MLP/expert blocks that avoid tile and wave quantization losses.

Each rule states the constraint, the value the config has, whether it passes, the nearest value
that does, and the measurement that supports it (`evidence`). With a measured GEMM table the tile the
hidden, q/kv, vocabulary and expert widths are aligned to is derived from the sweep (`tile_evidence`),
and the expert width is chosen from the table's rates; without one the rules use the hardware profile's
datasheet tile and say "rules (no measured table)". Widths are chosen by the estimator among tile
multiples near the requested one: the width with the lowest time per useful FLOP for the expert GEMMs
at the training step's tokens per expert.
"""

from dataclasses import asdict, dataclass

from zaya_model import ZayaConfig

from collbench.sizing.estimator import HardwareEstimator, nearest_row
from collbench.sizing.tile_evidence import TileEvidence

NO_TABLE = "rules (no measured table)"


@dataclass
class SizingRule:
    """One checked rule."""

    name: str
    value: int
    ok: bool
    recommended: int
    reason: str
    evidence: str = NO_TABLE  # the measurement (file, rows, measured drop) or why there is none
    measured: bool = False  # derived from a measured GEMM table

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
    est: HardwareEstimator, target: int, tokens_per_expert: int, hidden: int, spread: float = 0.125, tile: int = 0
) -> int:
    """The tile-multiple width within +-spread of `target` with the lowest time per useful FLOP."""
    tile = tile or est.hw.matmul_tile
    lo, hi = max(tile, round_up(int(target * (1 - spread)), tile)), round_up(int(target * (1 + spread)), tile)
    candidates = range(lo, hi + 1, tile)
    return min(
        candidates, key=lambda w: (round(expert_time_per_flop(est, tokens_per_expert, hidden, w), 18), abs(w - target))
    )


def tile_and_evidence(est: HardwareEstimator, evidence: TileEvidence | None) -> tuple[int, str, bool]:
    """(tile, what supports it, measured?): the sweep's derived tile, else the profile's datasheet tile."""
    datasheet = f"datasheet matmul_tile {est.hw.matmul_tile} of hardware {est.hw.name}"
    if evidence is None:
        return est.hw.matmul_tile, f"{NO_TABLE}: {datasheet}", False
    if evidence.granule is None:
        return est.hw.matmul_tile, f"{evidence.describe()}; kept the {datasheet}", False
    return evidence.granule, evidence.describe(), True


def expert_rows_evidence(est: HardwareEstimator, tokens_per_expert: int, hidden: int, widths: list[int]) -> str:
    """The measured GEMM rows the expert-width estimates were scaled from (1-based rows of the table)."""
    parts = []
    for w in dict.fromkeys(widths):
        rows = []
        for m, n, k in ((tokens_per_expert, 2 * w, hidden), (tokens_per_expert, hidden, w)):
            i = nearest_row(est.gemm_table, m, n, k)
            r = est.gemm_table[i]
            exact = "" if (r.m, r.n, r.k) == (m, n, k) else f" (nearest to {m}x{n}x{k})"
            rows.append(f"row {i + 1} {r.m}x{r.n}x{r.k} {r.tflops:.4g} TFLOP/s{exact}")
        parts.append(f"width {w}: " + ", ".join(rows))
    return "; ".join(parts)


def dimension_rules(
    cfg: ZayaConfig,
    est: HardwareEstimator,
    tokens_per_expert: int,
    tensor_parallel: int = 1,
    tolerance: float = 0.05,
    evidence: TileEvidence | None = None,
) -> list[SizingRule]:
    """Check a model's dims against the hardware's matrix-unit and parallelism constraints; an expert width
    fails when a nearby tile multiple is more than `tolerance` faster per useful FLOP. `evidence` (from a
    measured GEMM table, `derive_tile`) sets the tile and is named by every width rule."""
    tile, why, measured = tile_and_evidence(est, evidence)
    vocab_tile = tile if measured else max(128, tile)
    q, kv = cfg.num_attention_heads * cfg.head_dim, cfg.num_key_value_heads * cfg.head_dim
    rules = [
        SizingRule(
            "hidden_size % matmul_tile",
            cfg.hidden_size,
            cfg.hidden_size % tile == 0,
            round_up(cfg.hidden_size, tile),
            f"every projection has K or N = hidden_size; tile {tile}",
            why,
            measured,
        ),
        SizingRule(
            "head_dim in (64, 128, 256)",
            cfg.head_dim,
            cfg.head_dim in (64, 128, 256),
            128 if cfg.head_dim > 96 else 64,
            "fused attention kernels are tuned for these head sizes",
            "kernel support (flash/SDPA head sizes), not a GEMM measurement",
            False,
        ),
        SizingRule(
            "q width % matmul_tile",
            q,
            q % tile == 0,
            round_up(q, tile),
            f"num_attention_heads x head_dim is the N of the query projection; tile {tile}",
            why,
            measured,
        ),
        SizingRule(
            "kv width % matmul_tile",
            kv,
            kv % tile == 0,
            round_up(kv, tile),
            f"num_key_value_heads x head_dim is the N of the key/value projections; tile {tile}",
            why,
            measured,
        ),
        SizingRule(
            "num_key_value_heads % tensor_parallel",
            cfg.num_key_value_heads,
            cfg.num_key_value_heads % tensor_parallel == 0,
            round_up(cfg.num_key_value_heads, tensor_parallel),
            "each TP rank holds whole KV heads",
            "parallelism layout, not a GEMM measurement",
            False,
        ),
        SizingRule(
            "vocab_size % vocab_tile",
            cfg.vocab_size,
            cfg.vocab_size % vocab_tile == 0,
            round_up(cfg.vocab_size, vocab_tile),
            f"the LM head's N; pad the vocabulary to a multiple of {vocab_tile}",
            why,
            measured,
        ),
    ]
    width = cfg.moe_intermediate_size
    best = best_expert_width(est, width, tokens_per_expert, cfg.hidden_size, tile=tile)
    same = expert_time_per_flop(est, tokens_per_expert, cfg.hidden_size, best) >= expert_time_per_flop(
        est, tokens_per_expert, cfg.hidden_size, width
    ) * (1 - tolerance)
    expert_why = why
    if est.gemm_table:
        expert_why = (
            f"{why}; expert rates: {expert_rows_evidence(est, tokens_per_expert, cfg.hidden_size, [width, best])}"
        )
    rules.append(
        SizingRule(
            "moe_intermediate_size (tile/wave)",
            width,
            width % tile == 0 and same,
            width if same and width % tile == 0 else best,
            f"expert GEMMs [{tokens_per_expert} x {2 * width} x {cfg.hidden_size}] and "
            f"[{tokens_per_expert} x {cfg.hidden_size} x {width}] on {est.hw.compute_units} units",
            expert_why,
            measured or bool(est.gemm_table),
        )
    )
    return rules
