"""services/memstudy end to end: the Hydra app as a real subprocess on a tiny model and a small sample."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
from zaya_model import ZayaConfig, decode_bytes_per_token

MAIN = Path(__file__).resolve().parents[1] / "main.py"
SMALL = ["model=zaya1-tiny", "memstudy.sample_bytes=32768", "memstudy.window_bytes=16384", "logging.progress=false"]

pytestmark = pytest.mark.slow


def run(tmp_path, *overrides, multirun=False):
    flags = ["-m"] if multirun else []
    cmd = [sys.executable, str(MAIN), *flags, f"paths.root_dir={tmp_path}", *SMALL, *overrides]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300, cwd=tmp_path)


def test_single_run_reports_decode_and_prefill_against_zaya_models_accounting(tmp_path):
    result = run(tmp_path, "memstudy.batch_size=2", "memstudy.context_len=200", "memstudy.prompt_len=64")
    assert result.returncode == 0, result.stderr[-3000:]
    [run_dir] = (tmp_path / "outputs" / "memstudy").glob("*/*")
    doc = json.loads((run_dir / "memstudy.json").read_text())
    assert doc["standard"] == "hbm3_16gb_pc" and doc["model"] == "zaya1-tiny" and "sample" in doc["scaling"]
    decode, prefill = doc["results"]
    assert (decode["phase"], prefill["phase"]) == ("decode", "prefill")
    expected = decode_bytes_per_token(ZayaConfig.from_preset("zaya1-tiny"), 200, 2)
    assert decode["accounting_bytes"] == pytest.approx(expected.total)
    assert decode["accounting_bytes_per_token"] == pytest.approx(expected.per_token)
    reads, line = decode["stream_read_bytes"], decode["request_bytes"]
    for region in ("dense_weights", "kv_cache", "conv_and_delayed_state"):  # equal up to whole lines per run
        assert abs(reads[region] - getattr(expected, region)) <= 2 * 2 * line * 3, region
    one_expert = 3 * 32 * 64 * 2  # the step reads round(distinct experts x layers) whole experts
    assert abs(reads["expert_weights"] - expected.expert_weights) <= one_expert / 2
    assert decode["roofline_time_per_token_ns"] == pytest.approx(expected.per_token / decode["peak_bw_gbps"])
    assert decode["time_per_token_ns"] >= 0.99 * decode["roofline_time_per_token_ns"]
    assert decode["memory_bound"] is True  # decode of a tiny batch cannot be compute-bound on an H200
    assert prefill["tokens"] == 2 * 64 and prefill["stream_write_bytes"]["kv_cache"] > 0
    for r in (decode, prefill):
        assert r["energy_per_token_nj"] > 0 and r["read_latency_p99_ns"] >= r["read_latency_p50_ns"] > 0
    assert len((run_dir / "memstudy.csv").read_text().splitlines()) == 3
    for png in ("bandwidth_roofline.png", "read_latency.png"):
        assert (run_dir / png).read_bytes()[:4] == b"\x89PNG"
    assert "hbm3_16gb_pc decode:" in result.stdout


def test_multirun_over_memory_standards_writes_a_sweep_summary(tmp_path):
    result = run(tmp_path, "memory=hbm3,ddr5", "memstudy.phases=[decode]", multirun=True)
    assert result.returncode == 0, result.stderr[-3000:]
    [sweep] = (tmp_path / "outputs" / "memstudy" / "multirun").glob("*/*")
    jobs = sorted(p.name for p in sweep.glob("*_*") if p.is_dir())
    assert jobs == ["0_hbm3_16gb_pc", "1_ddr5_16gb_x8_4800"]
    rows = json.loads((sweep / "memstudy_sweep.json").read_text())
    by_standard = {r["standard"]: r for r in rows}
    assert by_standard.keys() == {"hbm3_16gb_pc", "ddr5_16gb_x8_4800"}
    hbm3, ddr5 = by_standard["hbm3_16gb_pc"], by_standard["ddr5_16gb_x8_4800"]
    assert hbm3["achieved_bw_gbps"] > 4 * ddr5["achieved_bw_gbps"]
    assert hbm3["time_per_token_ns"] < ddr5["time_per_token_ns"]
    assert hbm3["accounting_bytes"] == ddr5["accounting_bytes"]  # same model, same step
    assert (sweep / "memstudy_sweep.png").read_bytes()[:4] == b"\x89PNG"


def test_any_memsim_preset_can_be_picked_and_bad_configs_fail_at_start(tmp_path):
    bad = run(tmp_path, "memstudy.phases=[decoding]")
    assert bad.returncode != 0
    assert "memstudy.phases = 'decoding'; allowed: one of 'decode', 'prefill'" in bad.stderr
    assert not list((tmp_path / "outputs" / "memstudy").glob("*/*/memstudy.json"))
