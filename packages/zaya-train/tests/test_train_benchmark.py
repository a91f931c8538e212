"""The GPU benchmark script runs end to end on CPU with --smoke (so GPU time is not spent on a broken script)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "train_step.py"
PACKAGES = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_train_step_benchmark_smoke(tmp_path):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(str(p) for p in sorted(PACKAGES.glob("*/src"))))
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), "--smoke", "--out", str(tmp_path)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = json.loads((tmp_path / "results.json").read_text())["rows"]
    assert {r["optimizer"] for r in rows} == {"adamw", "muon"} and {r["micro_batch"] for r in rows} == {2, 4}
    for r in rows:  # the trainer's own step, its optimizer share, and the model alone beside it
        assert r["path"] == "Trainer" and r["global_batch"] == 8
        assert r["tokens_per_s"] > 0 and 0 < r["optimizer_ms"] < r["step_ms"] and r["model_fwd_bwd_tokens_per_s"] > 0
    assert (tmp_path / "throughput.png").stat().st_size > 1000 and "muon" in proc.stdout


@pytest.mark.slow
@pytest.mark.distributed
def test_dp_scaling_benchmark_smoke_on_two_cpu_processes(tmp_path):
    script = SCRIPT.with_name("dp_scaling.py")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(str(p) for p in sorted(PACKAGES.glob("*/src"))))
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2", str(script),
           "--smoke", "--out", str(tmp_path)]  # fmt: skip
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = json.loads((tmp_path / "scaling.json").read_text())
    assert [r["strategy"] for r in rows] == ["ddp", "ddp+zero1", "fsdp"], rows
    assert all(r["world_size"] == 2 and r["tokens_per_s"] > 0 for r in rows)


@pytest.mark.slow
def test_muon_step_benchmark_smoke(tmp_path):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(str(p) for p in sorted(PACKAGES.glob("*/src"))))
    proc = subprocess.run([sys.executable, str(SCRIPT.with_name("muon_step.py")), "--smoke", "--layers", "1",
                           "--steps", "1", "--out", str(tmp_path)], env=env, capture_output=True, text=True,
                          timeout=300)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads((tmp_path / "muon_step.json").read_text())
    names = [r["variant"] for r in result["rows"]]
    assert "muon per parameter (before batching)" in names and all(r["ms"] > 0 for r in result["rows"])
    assert result["meta"]["muon_matrices"] > 0
