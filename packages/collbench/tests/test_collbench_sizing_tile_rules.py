"""Sizing rules derived from a measured GEMM sweep: the tile is read from the sawtooth of an N sweep and every
width rule names the rows behind it; without a step (or without a table) the rules say so."""

import math
import random

import pytest
from collbench.gemm import GemmResult
from collbench.sizing.estimator import HardwareEstimator, load_gemm_table
from collbench.sizing.rules import NO_TABLE, dimension_rules
from collbench.sizing.tile_evidence import derive_tile
from collbench.tables import write_rows
from zaya_config import hardware
from zaya_model import ZayaConfig


def sweep(tile: int | None, noise: float = 0.01, seed: int = 0) -> list[GemmResult]:
    """An N sweep at M = K = 4096 whose time is that of the width padded to `tile` (None: no quantization),
    with multiplicative timing noise."""
    rnd = random.Random(seed)
    rows = []
    for n in range(1024, 2049, 16):
        paid = math.ceil(n / tile) * tile if tile else n
        t_us = paid * 0.5 * (1 + noise * rnd.uniform(-1, 1))
        rows.append(GemmResult(4096, n, 4096, "n_sweep", f"N={n}", "bfloat16", t_us, 2 * 4096 * n * 4096 / t_us / 1e6,
                               1.0, 1.0, "test"))  # fmt: skip
    return rows


@pytest.mark.parametrize("tile", [64, 128, 256])
def test_derive_tile_reads_the_tile_from_the_sawtooth(tile):
    ev = derive_tile(sweep(tile), "gemm.csv")
    assert ev.granule == tile and ev.drop > 0.02 and ev.widths >= 10
    assert ev.rows and all(1 <= r <= 65 for r in ev.rows)
    assert f"not a multiple of {tile}" in ev.describe() and "gemm.csv rows" in ev.describe()


def test_no_step_no_rule_even_with_a_rising_rate_or_noise():
    smooth = derive_tile(sweep(None), "gemm.csv")
    assert smooth.granule is None and "no tile step" in smooth.describe()
    rising = [
        GemmResult(256, n, 256, "n_sweep", "", "float32", 1.0, n**0.5, 1.0, 1.0, "cpu") for n in range(16, 513, 8)
    ]
    assert derive_tile(rising, "g.csv").granule is None  # small shapes speed up with N: not a tile step
    noisy = derive_tile(sweep(None, noise=0.08, seed=3), "gemm.csv")
    assert noisy.granule is None  # timing scatter alone is no tile


def test_rules_name_the_measurement_and_use_the_derived_tile(tmp_path):
    table = sweep(128)
    write_rows([r.as_row() for r in table], tmp_path / "gemm.csv")
    est = HardwareEstimator(hardware("h200"), load_gemm_table(tmp_path / "gemm.csv"))
    ev = derive_tile(est.gemm_table, str(tmp_path / "gemm.csv"))
    cfg = ZayaConfig.from_preset("zaya1-base", hidden_size=2112, vocab_size=262200)  # 2112 = 33 x 64
    rules = {r.name: r for r in dimension_rules(cfg, est, tokens_per_expert=1024, evidence=ev)}
    hidden = rules["hidden_size % matmul_tile"]
    assert not hidden.ok and hidden.recommended == 2176  # a multiple of the measured 128, not the datasheet 64
    assert hidden.measured and str(tmp_path / "gemm.csv") in hidden.evidence and "128" in hidden.evidence
    assert rules["vocab_size % vocab_tile"].recommended == 262272 and rules["vocab_size % vocab_tile"].measured
    assert "row " in rules["moe_intermediate_size (tile/wave)"].evidence  # the expert rates' rows
    assert not rules["head_dim in (64, 128, 256)"].measured  # not a GEMM rule, and it says so


def test_rules_without_a_measured_table_or_step_say_so():
    est = HardwareEstimator(hardware("h200"))
    cfg = ZayaConfig.from_preset("zaya1-base", hidden_size=2112)
    plain = {r.name: r for r in dimension_rules(cfg, est, 1024)}
    assert plain["hidden_size % matmul_tile"].ok  # 2112 is a multiple of the datasheet tile 64
    assert (
        plain["hidden_size % matmul_tile"].evidence.startswith(NO_TABLE)
        and not plain["hidden_size % matmul_tile"].measured
    )
    flat = derive_tile(sweep(None), "flat.csv")
    kept = {r.name: r for r in dimension_rules(cfg, est, 1024, evidence=flat)}
    assert "no tile step" in kept["hidden_size % matmul_tile"].evidence
    assert "kept the datasheet matmul_tile 64" in kept["hidden_size % matmul_tile"].evidence


def test_estimated_study_with_a_measured_table_names_it_in_every_width_rule(tmp_path):
    import json

    from collbench.config import SizingConfig
    from collbench.sizing.study import run_sizing

    write_rows([r.as_row() for r in sweep(128)], tmp_path / "run" / "gemm.csv")
    sizing = SizingConfig(num_experts=[8, 16], top_k=[1], measured_dir=str(tmp_path / "run"))
    out = run_sizing(sizing, ZayaConfig.from_preset("zaya1-base"), hardware("h200"), tmp_path / "out")
    rules = {r["name"]: r for r in json.loads(out.files["rules"].read_text())}
    for name in ("hidden_size % matmul_tile", "q width % matmul_tile", "vocab_size % vocab_tile"):
        assert rules[name]["measured"] and "gemm.csv rows" in rules[name]["evidence"]
    assert "measured GEMM table" in out.files["recommended"].read_text().splitlines()[0]
