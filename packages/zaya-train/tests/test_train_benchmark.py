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


@pytest.mark.slow
def test_cp_memory_benchmark_smoke_and_skip_without_cuda(tmp_path, capsys, monkeypatch):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(str(p) for p in sorted(PACKAGES.glob("*/src"))))
    script = str(SCRIPT.with_name("cp_memory.py"))
    proc = subprocess.run([sys.executable, script, "--smoke", "--out", str(tmp_path / "smoke")], env=env,
                          capture_output=True, text=True, timeout=300)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = json.loads((tmp_path / "smoke" / "cp_memory.json").read_text())["rows"]
    assert [(r["seq_len"], r["activation_checkpointing"]) for r in rows] == [
        (64, "none"),
        (64, "full"),
        (128, "none"),
        (128, "full"),
    ]
    assert all(r["ok"] and r["cp"] == 1 for r in rows)
    import torch

    if not torch.cuda.is_available():  # the GPU measurement itself: skipped, saying so, nothing written (run as
        import runpy  # the script, in this process: the smoke above already started it as a process)

        monkeypatch.setattr(sys, "argv", [script, "--out", str(tmp_path / "gpu")])
        runpy.run_path(script, run_name="__main__")
        assert "no CUDA device is visible: skipped" in capsys.readouterr().out
        assert not (tmp_path / "gpu").exists()


def test_cp_comm_script_writes_the_model_computed_volumes(tmp_path):
    from zaya_model import ZayaConfig
    from zaya_model.cp_traffic import context_parallel_traffic

    env = dict(os.environ, PYTHONPATH=os.pathsep.join(str(p) for p in sorted(PACKAGES.glob("*/src"))))
    out = tmp_path / "cp_comm.json"
    proc = subprocess.run([sys.executable, str(SCRIPT.with_name("cp_comm.py")), "--out", str(out)], env=env,
                          capture_output=True, text=True, timeout=300)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = json.loads(out.read_text())["rows"]
    base = ZayaConfig.from_preset("zaya1-base")
    assert len(rows) == 12 and {r["cp_size"] for r in rows} == {2, 4, 8}
    for r in rows:
        want = context_parallel_traffic(base, 32768, r["cp_size"], r["scheme"], recompute=r["activation_checkpointing"])
        assert r["total"] == want.total and r["kv_forward"] == want.kv_forward
    by = {(r["cp_size"], r["activation_checkpointing"], r["scheme"]): r["total"] for r in rows}
    for n in (2, 4, 8):  # the chosen all-gather moves fewer bytes than ring attention, with or without recompute
        assert (
            by[(n, False, "all_gather")] < by[(n, False, "ring")]
            and by[(n, True, "all_gather")] < by[(n, True, "ring")]
        )
    # zaya1-base, cp 2, no recompute: 40 layers x K/V of 32768 tokens x 2 x 256 values x 2 bytes, half each way
    assert by[(2, False, "all_gather")] - rows[0]["halo"] - rows[0]["loss"] == 40 * 32768 * 512 * 2 // 2 * 2
