"""Sizing rules and the MoE width study on the datasheet profiles, with and without a measured GEMM table."""

import csv

import pytest
from collbench import CollbenchError
from collbench.config import SizingConfig
from collbench.gemm import GemmResult
from collbench.sizing.estimator import HardwareEstimator, load_gemm_table
from collbench.sizing.moe_study import decode_step_time_s, expert_shapes, run_moe_study
from collbench.sizing.rules import best_expert_width, dimension_rules
from collbench.sizing.study import run_sizing
from collbench.tables import write_rows
from zaya_config import hardware
from zaya_model import ZayaConfig


@pytest.fixture(scope="module")
def h200():
    return HardwareEstimator(hardware("h200"))


def test_rules_flag_misaligned_dims_and_say_what_to_use(h200):
    cfg = ZayaConfig.from_preset("zaya1-base", hidden_size=2000, vocab_size=262200, moe_intermediate_size=2000)
    rules = {r.name: r for r in dimension_rules(cfg, h200, tokens_per_expert=1024, tensor_parallel=4)}
    assert not rules["hidden_size % matmul_tile"].ok and rules["hidden_size % matmul_tile"].recommended == 2048
    assert not rules["vocab_size % vocab_tile"].ok and rules["vocab_size % vocab_tile"].recommended == 262272
    assert not rules["num_key_value_heads % tensor_parallel"].ok  # 2 KV heads cannot split over 4 ranks
    expert = rules["moe_intermediate_size (tile/wave)"]
    assert not expert.ok and expert.recommended % 64 == 0
    assert all(r.ok for r in dimension_rules(ZayaConfig.from_preset("zaya1-base"), h200, 1024))


def test_best_expert_width_is_a_tile_multiple_near_the_target(h200):
    w = best_expert_width(h200, 2000, tokens_per_expert=1024, hidden=2048)
    assert w % 64 == 0 and 1750 <= w <= 2250


def test_iso_param_grid_keeps_expert_parameters():
    base = ZayaConfig.from_preset("zaya1-base")
    pairs = expert_shapes(SizingConfig(num_experts=[8, 16, 32, 3]), base)
    assert pairs == [(8, 4096), (16, 2048), (32, 1024)]  # 3 does not divide 16 x 2048
    with pytest.raises(CollbenchError, match="no num_experts"):
        expert_shapes(SizingConfig(num_experts=[3]), base)


def test_moe_study_front_is_non_dominated_and_the_knee_is_on_it(h200):
    sizing = SizingConfig(num_experts=[4, 16, 64, 128], top_k=[1, 2], decode_batches=[1, 8, 64], latency_batch=8)
    cands, chosen = run_moe_study(sizing, ZayaConfig.from_preset("zaya1-base"), h200)
    assert len(cands) == 8 and chosen.pareto
    front = [c for c in cands if c.pareto]
    for c in front:
        assert not any(o.train_tflops > c.train_tflops and o.latency(8) < c.latency(8) for o in cands)
    for c in cands:
        assert c.latency(1) <= c.latency(8) <= c.latency(64)  # more sequences touch more experts
        assert 0 < c.mfu <= 1.0
    narrow = next(c for c in cands if c.num_experts == 128 and c.num_experts_per_tok == 1)
    wide = next(c for c in cands if c.num_experts == 4 and c.num_experts_per_tok == 1)
    assert narrow.mfu < wide.mfu and narrow.latency(8) < wide.latency(8)  # the trade-off the study draws


def test_decode_is_memory_bound_at_batch_one(h200):
    cfg = ZayaConfig.from_preset("zaya1-base")
    from zaya_model import decode_bytes_per_token

    t = decode_step_time_s(cfg, h200, 1, 4096)
    assert t == pytest.approx(decode_bytes_per_token(cfg, 4096, 1).total / (4800e9))


def test_measured_table_changes_the_estimate(h200, tmp_path):
    slow = GemmResult(4096, 4096, 4096, "square", "4096^3", "bfloat16", 1.0, 100.0, 1.0, 1.0, "test")
    write_rows([slow.as_row()], tmp_path / "gemm.csv")
    measured = HardwareEstimator(hardware("h200"), load_gemm_table(tmp_path / "gemm.csv"))
    assert measured.gemm_flops_rate(4096, 4096, 4096) == pytest.approx(100e12)
    assert h200.gemm_flops_rate(4096, 4096, 4096) > 5 * measured.gemm_flops_rate(4096, 4096, 4096)
    with pytest.raises(CollbenchError, match="no GEMM table"):
        load_gemm_table(tmp_path / "missing.csv")


def test_run_sizing_writes_a_loadable_recommended_config(tmp_path):
    import yaml

    out = run_sizing(SizingConfig(), ZayaConfig.from_preset("zaya1-tiny"), hardware("cpu"), tmp_path)
    assert {p.name for p in out.files.values()} == {
        "moe_study.csv",
        "moe_pareto.png",
        "decode_latency.png",
        "sizing_rules.json",
        "recommended_model.yaml",
    }
    data = yaml.safe_load((tmp_path / "recommended_model.yaml").read_text())
    rec = ZayaConfig.from_dict(data)  # validates
    assert rec.num_experts == out.chosen.num_experts and rec.name == "zaya1-tiny-sized"
    with (tmp_path / "moe_study.csv").open() as fh:
        assert len(list(csv.DictReader(fh))) == len(out.candidates)
