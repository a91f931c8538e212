"""The RTL-paths benchmark runs end to end (`--smoke`, the Icarus path only: its build is instant)."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_cosim.py"


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("iverilog") is None, reason="Icarus Verilog not found: apt-get install -y iverilog")
def test_bench_cosim_smoke(tmp_path: Path) -> None:
    pytest.importorskip("cocotb", reason="cocotb is not installed (pip install memsim[cosim])")
    proc = subprocess.run([sys.executable, str(SCRIPT), "--out", str(tmp_path), "--smoke", "--paths", "cocotb-icarus"],
                          capture_output=True, text=True, timeout=300)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads((tmp_path / "bench_cosim.json").read_text())
    (row,) = result["rows"]
    assert row["path"] == "cocotb-icarus" and row["design_cycles"] > 1000 and row["cycles_per_s"] > 0
    assert (tmp_path / "bench_cosim.png").stat().st_size > 0
