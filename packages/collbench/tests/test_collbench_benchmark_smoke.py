"""benchmarks/bench_device.py --smoke on CPU, as a real subprocess, before anyone spends GPU time on it."""

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
SCRIPT = ROOT / "packages" / "collbench" / "benchmarks" / "bench_device.py"


@pytest.mark.slow
def test_bench_device_smoke_bundles_tables_plots_and_preset_into_few_files(tmp_path):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(str(p) for p in sorted((ROOT / "packages").glob("*/src")))}
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), "--smoke", "--device", "cpu", "--all-plots", "--out", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "torch.matmul 128^3" in proc.stdout and "targets:" in proc.stdout
    # the lent GPU machine hands back at most 8 files, at most 2 folders deep: the bundle stays at 7
    written = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*") if p.is_file())
    assert written == [
        "characterization.png",
        "gemm.csv",
        "hardware/cpu-measured.yaml",
        "plots/gemm.png",
        "plots/membw.png",
        "plots/roofline.png",
        "results.json",
    ]
    assert all((tmp_path / name).stat().st_size > 0 for name in written)
    results = json.loads((tmp_path / "results.json").read_text())
    assert sorted(results["files"]) == written
    assert results["smoke"] and results["gemm_peak_tflops"] > 0 and results["best_copy_gbps"] > 0
    assert set(results["bw_vs_best_copy"]) == {"copy", "read", "write", "triad"}
    # every table is inside results.json; gemm.csv (what sizing.measured_dir reads) holds the same rows
    with (tmp_path / "gemm.csv").open(newline="") as fh:
        assert [r["label"] for r in csv.DictReader(fh)] == [r["label"] for r in results["gemm"]]
    assert {r["kernel"] for r in results["membw"]} == {"copy", "read", "write", "triad"}
    # timed through the duration-based policy: several batches per point, rotated GEMM operands
    assert results["timing_policy"]["batch_s"] > 0 and results["clock_warmup"][0]["calls"] >= 1
    assert all(r["batches"] == 3 and r["calls_per_batch"] >= 2 for r in results["gemm"] + results["membw"])
    assert max(r["operand_sets"] for r in results["gemm"]) > 1
    assert "defaults:" in (tmp_path / "hardware" / "cpu-measured.yaml").read_text()
