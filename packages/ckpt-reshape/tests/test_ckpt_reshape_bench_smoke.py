"""The benchmark script runs end to end at tiny widths (so a full run is not the first time it executes), as a
subprocess, with `--fork`: its Python children fork it instead of starting an interpreter each, but for the
import baseline, which starts afresh every round (the path every child takes without `--fork`)."""

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
            "--warmup",
            "0",
            "--workdir",
            str(tmp_path / "new" / "work"),
            "--fork",
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


@pytest.mark.slow
def test_bench_reshape_only_runs_the_chosen_conversions_after_uncounted_warmup(tmp_path: Path):
    argv = [sys.executable, str(SCRIPT), "--out", str(tmp_path), "--smoke", "--layers", "1"]
    argv += ["--repeats", "2", "--warmup", "1", "--only", "torch --no-fsync$", "--fork"]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    runs = json.loads((tmp_path / "bench_reshape.json").read_text())["runs"]
    assert set(runs) == {"cp -r", "cp -r + fsync", "import baseline", "convert dcp->torch --no-fsync"}
    assert all(len(run["work_s_samples"]) == 2 for run in runs.values())  # the warm-up round is not counted
    assert done.stdout.count("[warm-up 1/1]") == 4
