"""The GPU benchmark script runs end to end on CPU with --smoke (so GPU time is not wasted on a typo)."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).parents[1] / "benchmarks" / "bench_model.py"


@pytest.mark.slow
def test_bench_model_smoke(tmp_path):
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), "--smoke", "--out", str(tmp_path)], capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    summary = json.loads((tmp_path / "bench_model.json").read_text())
    assert {"ours-eager", "ours-eager-fused-loss"} <= set(summary["results"])
    if summary["hf_error"] is None:  # transformers with zaya is installed here
        assert summary["logits_max_abs_diff_vs_hf"] < 1e-4 and summary["train_speedup_vs_hf"] > 0
    assert (tmp_path / "bench_model.png").stat().st_size > 0
    assert "train speedup vs HF" in proc.stdout or summary["hf_error"]


DECODE_SCRIPT = Path(__file__).parents[1] / "benchmarks" / "bench_decode.py"


@pytest.mark.slow
def test_bench_decode_smoke(tmp_path):
    proc = subprocess.run(
        [sys.executable, str(DECODE_SCRIPT), "--smoke", "--out", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    summary = json.loads((tmp_path / "decode.json").read_text())
    assert not summary["errors"], summary["errors"]
    keys = {"layers", "batch", "ms_per_token", "tokens_per_s", "bytes_per_token", "roofline_fraction"}
    ours = [r for r in summary["rows"] if r["impl"] != "hf-generate"]
    assert {(r["layers"], r["batch"], r["impl"]) for r in ours} >= {(1, 1, "eager"), (2, 4, "compiled-graph")}
    for row in summary["rows"]:
        assert keys <= row.keys() and row["tokens_per_s"] > 0 and 0 < row["roofline_fraction"] < 1
    assert all(r["greedy_equal_to_eager"] for r in ours)  # fp32 on a CPU: every path picks the same tokens
    assert summary["copy_bandwidth_gbps"] > 0 and (tmp_path / "decode.png").stat().st_size > 1000
