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


E2E = SCRIPT.with_name("bench_e2e.py")


@pytest.mark.slow
def test_bench_e2e_smoke(tmp_path: Path):
    """The end-to-end benchmark (start-up included) at 2 MB, one counted round, driven in-process (its timed jobs
    are still fresh processes): a record per size with every job, and the plot."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("bench_e2e", E2E)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    results = bench.run(tmp_path, [2], repeats=1, work=tmp_path / "work", warmup=0)
    record = json.loads((tmp_path / "bench_e2e.json").read_text())["sizes"]["2"]
    assert record == json.loads(json.dumps(results["sizes"]["2"]))
    assert set(record["median_s"]) == {
        "cp -r",
        "zaya ckpt convert --no-fsync",
        "convert, torch path",
        "start-up (import ckpt_reshape.convert)",
    }
    assert record["bytes"] >= 2 * 2**20 and (tmp_path / "bench_e2e.png").stat().st_size > 0
