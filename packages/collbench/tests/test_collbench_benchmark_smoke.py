"""benchmarks/bench_device.py --smoke on CPU, as a real subprocess, before anyone spends GPU time on it."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
SCRIPT = ROOT / "packages" / "collbench" / "benchmarks" / "bench_device.py"


@pytest.mark.slow
def test_bench_device_smoke_writes_tables_plots_and_preset(tmp_path):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(str(p) for p in sorted((ROOT / "packages").glob("*/src")))}
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), "--smoke", "--device", "cpu", "--out", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "torch.matmul 128^3" in proc.stdout and "targets:" in proc.stdout
    results = json.loads((tmp_path / "results.json").read_text())
    assert results["smoke"] and results["gemm_peak_tflops"] > 0 and results["best_copy_gbps"] > 0
    assert set(results["bw_vs_best_copy"]) == {"copy", "read", "write", "triad"}
    for name in (
        "gemm.csv",
        "gemm.json",
        "membw.csv",
        "plots/gemm.png",
        "plots/membw.png",
        "plots/roofline.png",
        "hardware/cpu-measured.yaml",
    ):
        assert (tmp_path / name).stat().st_size > 0, name
    assert "defaults:" in (tmp_path / "hardware" / "cpu-measured.yaml").read_text()
