"""services/memstudy end to end: the Hydra app as a real subprocess on a tiny model and a small sample; the README's
sweep over every standard runs here as written (tests/test_readme_commands.py leaves it to this file)."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
from readme_blocks import TINY_MEMSTUDY, checkout_workdir, run_script_ok, sized_command
from zaya_model import ZayaConfig, decode_bytes_per_token

MAIN = Path(__file__).resolve().parents[1] / "main.py"
SMALL = TINY_MEMSTUDY.split()  # model=zaya1-tiny, a small sample: what test_readme_commands.py appends
EVERY_STANDARD = sized_command("services/memstudy/README.md", "python services/memstudy/main.py -m memory=")
JOBS = ["0_hbm3_16gb_pc", "1_hbm2_8gb_x128", "2_gddr6_8gb_x16", "3_ddr5_16gb_x8_4800", "4_ddr4_8gb_x8_3200",
        "5_lpddr4_8gb_x16_2400"]  # fmt: skip

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
    work = checkout_workdir(tmp_path)
    run_script_ok(EVERY_STANDARD, work, timeout=300)  # -m memory=hbm3,hbm2,gddr6,ddr5,ddr4,lpddr4
    [sweep] = (work / "outputs" / "memstudy" / "multirun").glob("*/*")
    jobs = sorted(p.name for p in sweep.glob("*_*") if p.is_dir())
    assert jobs == JOBS
    rows = json.loads((sweep / "memstudy_sweep.json").read_text())
    assert sorted((r["job"], r["phase"]) for r in rows) == [(j, p) for j in JOBS for p in ("decode", "prefill")]
    by_standard = {r["standard"]: r for r in rows if r["phase"] == "decode"}
    assert by_standard.keys() == {j.partition("_")[2] for j in JOBS}
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
