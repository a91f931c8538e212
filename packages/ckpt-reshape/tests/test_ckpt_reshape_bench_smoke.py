"""The benchmark script runs end to end at tiny widths (so a full run is not the first time it executes)."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_reshape.py"


@pytest.mark.slow
def test_bench_reshape_smoke(tmp_path: Path):
    done = subprocess.run(
        [
            sys.executable,
            str(SCRIPT),
            "--out",
            str(tmp_path),
            "--smoke",
            "--layers",
            "2",
            "--repeats",
            "1",
            "--workdir",
            str(tmp_path / "new" / "work"),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    results = json.loads((tmp_path / "bench_reshape.json").read_text())
    expected = {"cp -r", "reshape dcp->dcp dp=4,ep=4,fsdp", "reshape dcp->dcp dp=4,ep=4,fsdp --no-fsync"}
    assert expected | {"dcp_to_torch_save (torch)"} <= set(results["runs"])
    assert all(run["bytes_written"] > 0 for name, run in results["runs"].items() if name != "import baseline")
    assert (tmp_path / "bench_reshape.png").stat().st_size > 0
