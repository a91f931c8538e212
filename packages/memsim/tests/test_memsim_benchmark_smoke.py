"""The benchmark script runs end to end on CPU (`--smoke`), so a full run will not fail late."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_memsim.py"


@pytest.mark.slow
def test_benchmark_smoke(tmp_path: Path, reference_dir: Path) -> None:
    proc = subprocess.run([sys.executable, str(SCRIPT), "--out", str(tmp_path), "--smoke",
                           "--reference", str(reference_dir)], capture_output=True, text=True, timeout=300)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    result = json.loads((tmp_path / "bench_memsim.json").read_text())
    rows = result["reference_runs"]
    assert rows and all(r[f"{e}_identical"] for r in rows for e in result["engines"])  # equal to DRAMSim3's stats
    assert "python" in result["engines"]
    assert result["synthetic"][0]["req_per_s"] > 0
