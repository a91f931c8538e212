"""Saturating driver, step study and its report: real simulations on small streams."""

import json

import numpy as np
import pytest
from memsim import MemorySystem, load_spec
from memsim.workloads import (
    LlmStepShape,
    MemstudyConfig,
    StudyCase,
    peak_bandwidth_gbps,
    run_memstudy,
    run_saturating,
    simulate_step,
)
from memsim.workloads.study_sweep import summarize_sweep
from zaya_config import ZayaConfigError, validate_node


def shape(batch_size: int = 2, **changes) -> LlmStepShape:
    base = dict(phase="decode", layers=4, batch_size=batch_size, tokens=batch_size, dense_bytes_per_layer=40_000,
                head_bytes=60_000, expert_bytes=24_000, experts_per_layer=8, active_experts_per_layer=1.5,
                kv_read_bytes_per_sequence=8_000, kv_write_bytes_per_sequence=64,
                kv_capacity_bytes_per_sequence=16_384, state_bytes_per_sequence=256)  # fmt: skip
    return LlmStepShape(**{**base, **changes})


def test_saturating_driver_completes_every_request_near_peak_for_a_sequential_stream():
    system = MemorySystem("hbm2_8gb_x128", functional=False)
    n = 4096
    addrs = np.arange(n, dtype=np.int64) * system.line_bytes
    writes = np.zeros(n, dtype=bool)
    writes[::8] = True
    result = run_saturating(system, addrs, writes)
    assert result.requests == n and len(result.read_latencies) == n - n // 8
    assert all(not c.read_queue and not c.pending_writes for c in system.channels)
    bw = n * system.line_bytes / (result.cycles * system.spec.tCK_ns)
    peak = peak_bandwidth_gbps(system.spec)
    assert 0.6 * peak < bw <= peak
    assert (result.read_latencies >= system.spec.t("read_delay")).all()  # no read beats CAS + burst


def test_a_sequential_stream_hits_open_rows_and_scattered_lines_miss_them():
    def row_hit_rate(addrs):
        system = MemorySystem("ddr4_8gb_x8_3200", functional=False)
        run_saturating(system, addrs, np.zeros(len(addrs), dtype=bool))
        stats = system.stats()
        return sum(c["num_read_row_hits"] for c in stats.values()) / sum(c["num_read_cmds"] for c in stats.values())

    n = 1500
    sequential = np.arange(n, dtype=np.int64) * 64
    scattered = np.random.default_rng(0).integers(0, 1 << 30, size=n, dtype=np.int64) // 64 * 64
    assert row_hit_rate(sequential) > 0.9
    assert row_hit_rate(scattered) < 0.1


def test_a_sample_estimates_the_whole_steps_time_bandwidth_and_energy():
    spec = load_spec("hbm2_8gb_x128")
    step = shape()
    common = dict(window_bytes=16_384, seed=0)
    whole = simulate_step(spec, step, 400_000, sample_bytes=1 << 24, **common)
    part = simulate_step(spec, step, 400_000, sample_bytes=1 << 17, **common)
    assert whole["sample_scale"] == 1.0 and part["sample_scale"] > 3
    assert part["step_time_ns"] == pytest.approx(whole["step_time_ns"], rel=0.15)
    assert part["achieved_bw_gbps"] == pytest.approx(whole["achieved_bw_gbps"], rel=0.1)
    assert part["energy_per_token_nj"] == pytest.approx(whole["energy_per_token_nj"], rel=0.1)
    assert whole["step_time_ns"] >= whole["roofline_step_time_ns"] * 0.99  # nothing beats the roofline


def test_metrics_are_consistent_with_the_accounting_and_the_standard():
    spec = load_spec("ddr5_16gb_x8_4800")
    m = simulate_step(spec, shape(), 300_000.0, sample_bytes=1 << 16, window_bytes=8192)
    assert m["peak_bw_gbps"] == pytest.approx(2 * 64 / (8 * 0.416))
    assert m["roofline_step_time_ns"] == pytest.approx(300_000 / m["peak_bw_gbps"])
    assert m["time_per_token_ns"] == pytest.approx(m["step_time_ns"] / 2)
    assert m["read_latency_p50_ns"] <= m["read_latency_p99_ns"] <= m["read_latency_max_ns"]
    assert 0 < m["bw_efficiency"] <= 1 and 0 <= m["row_hit_rate"] <= 1
    assert 0 < len(m["read_latencies_ns"]) <= m["sampled_requests"]  # writes have no read latency


def test_larger_batches_share_the_weights_and_cost_less_energy_per_token():
    spec = load_spec("hbm2_8gb_x128")
    small = simulate_step(spec, shape(1), 300_000, sample_bytes=1 << 16, window_bytes=16_384)
    large = simulate_step(spec, shape(8), 300_000, sample_bytes=1 << 16, window_bytes=16_384)
    assert large["energy_per_token_nj"] < small["energy_per_token_nj"]
    assert large["time_per_token_ns"] < small["time_per_token_ns"]


def test_run_memstudy_writes_json_csv_plots_and_a_sweep_summary(tmp_path):
    spec = load_spec("hbm2_8gb_x128")
    study = MemstudyConfig(sample_bytes=1 << 15, window_bytes=8192)
    prefill = shape(phase="prefill", tokens=64, kv_read_bytes_per_sequence=0, kv_write_bytes_per_sequence=4096,
                    state_read=False)  # fmt: skip
    cases = [StudyCase(shape(), 300_000, flops=1e6, labels={"model": "toy"}), StudyCase(prefill, 250_000, flops=1e9)]
    doc = run_memstudy(spec, cases, study, tmp_path / "0_a", {"model": "toy"}, peak_flops=1e12, progress=False)
    (tmp_path / "1_b").mkdir()
    (tmp_path / "1_b" / "memstudy.json").write_text((tmp_path / "0_a" / "memstudy.json").read_text())
    saved = json.loads((tmp_path / "0_a" / "memstudy.json").read_text())
    assert saved["results"] == doc["results"] and "sampl" in saved["scaling"]
    assert [r["phase"] for r in saved["results"]] == ["decode", "prefill"]
    assert saved["results"][0]["memory_bound"] is True and saved["results"][1]["memory_bound"] is False
    assert sum(saved["read_latency_histograms"]["decode"]["counts"]) > 0
    header = (tmp_path / "0_a" / "memstudy.csv").read_text().splitlines()
    assert len(header) == 3 and "achieved_bw_gbps" in header[0] and "read_latency_p99_ns" in header[0]
    for png in ("bandwidth_roofline.png", "read_latency.png"):
        assert (tmp_path / "0_a" / png).read_bytes()[:4] == b"\x89PNG"
    rows = summarize_sweep(tmp_path)
    assert [(r["job"], r["phase"]) for r in rows] == [("0_a", "decode"), ("0_a", "prefill"), ("1_b", "decode"),
                                                      ("1_b", "prefill")]  # fmt: skip
    assert (tmp_path / "memstudy_sweep.png").is_file() and (tmp_path / "memstudy_sweep.csv").is_file()


@pytest.mark.parametrize(
    ("node", "message"),
    [
        ({"phases": ["decoding"]}, "memstudy.phases = 'decoding'"),
        ({"batch_size": 0}, "memstudy.batch_size = 0"),
        ({"window_bytes": 4096, "sample_bytes": 1024}, "memstudy.window_bytes = 4096"),
        ({"context_len": -1}, "memstudy.context_len = -1"),
    ],
)
def test_bad_study_configs_name_the_key(node, message):
    with pytest.raises(ZayaConfigError, match=message):
        validate_node("memstudy", node, MemstudyConfig)


def test_reads_only_streams_leave_out_the_writes_and_an_empty_sweep_writes_nothing(tmp_path):
    spec = load_spec("hbm2_8gb_x128")
    m = simulate_step(spec, shape(), 300_000, sample_bytes=1 << 15, window_bytes=8192, include_writes=False)
    assert set(m["stream_write_bytes"].values()) == {0}
    assert m["stream_bytes"] == sum(m["stream_read_bytes"].values())
    assert summarize_sweep(tmp_path) == [] and not list(tmp_path.iterdir())
