"""The fault-tolerance benchmark scripts run end to end in their --smoke mode (before anyone spends GPU time)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), "OMP_NUM_THREADS": "1"}


@pytest.mark.slow
def test_ckpt_save_times_smoke(tmp_path: Path) -> None:
    result = subprocess.run([sys.executable, str(BENCHMARKS / "ckpt_save_times.py"), "--smoke", "--out", str(tmp_path)],
                            capture_output=True, text=True, env=ENV, timeout=300)  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    rows = json.loads((tmp_path / "ckpt_save_times.json").read_text())["results"]
    assert {r["mode"] for r in rows} == {"sync", "async"}
    assert all(0 < r["blocking_s"] <= r["total_s"] for r in rows)
    assert (tmp_path / "ckpt_save_times.png").stat().st_size > 0


@pytest.mark.slow
def test_soak_smoke(tmp_path: Path) -> None:
    result = subprocess.run([sys.executable, str(BENCHMARKS / "soak.py"), "--smoke", "--out", str(tmp_path)],
                            capture_output=True, text=True, env=ENV, timeout=600)  # fmt: skip
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-3000:]
    summary = json.loads((tmp_path / "soak.json").read_text())["summary"]
    assert summary["kills"] == 1 and summary["checkpoints_lost"] == 0 and summary["all_hashes_equal"]
    assert (tmp_path / "soak.png").stat().st_size > 0
