"""The composition benchmark runs end to end at smoke size (the real run is recorded in BENCHMARKS.md)."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_compose.py"


@pytest.mark.slow
def test_bench_compose_smoke(tmp_path):
    result = subprocess.run(
        [sys.executable, str(BENCH), "--smoke", "--out", str(tmp_path / "out"), "--cache-dir", str(tmp_path / "cache")],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    results = json.loads((tmp_path / "out" / "results.json").read_text())
    assert results["smoke"] and results["catalog_records"] == 340
    assert set(results["latency"]) == {"1", "4"} and results["latency"]["1"]["median_ms"] > 0
    assert set(results["win_rates"]) == {"desktop-24gb/plain", "desktop-24gb/masked"}
    assert results["win_rates_judge"].startswith("plan-metrics (smoke check")
    for name in ("latency.png", "win_rates.png"):
        assert (tmp_path / "out" / name).read_bytes()[:4] == b"\x89PNG"
    assert "compose latency" in result.stdout
