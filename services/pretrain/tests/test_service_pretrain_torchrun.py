"""The torchrun launch recipe (infra/torchrun/single_node.sh) runs the service as 2 gloo processes with FSDP2
on CPU: one shared run dir, every rank's checkpoint shards, the same summary as a normal run writes."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
SCRIPT = ROOT / "infra" / "torchrun" / "single_node.sh"
TINY = [
    "recipe.phases.0.tokens=12288",  # 6 steps of 16 x 128
    "recipe.phases.1.tokens=8192",  # 2 steps of 16 x 256
    "train.data.sources.library.max_files=60",
    "train.data.sources.tests.max_files=80",
    "train.data.val_fraction=0.15",
    "train.eval.every_steps=4",
    "train.eval.sequences=8",
    "train.eval.sample_tokens=16",
    "train.checkpoint.every_steps=4",
    "train.eval.downstream.limit=16",
    "train.plots=false",
]


@pytest.mark.slow
@pytest.mark.distributed
def test_single_node_script_runs_fsdp_on_two_cpu_processes(tmp_path):
    run_dir = tmp_path / "run"
    env = dict(os.environ, NPROC="2", PYTHON=sys.executable, RUN_DIR=str(run_dir))
    proc = subprocess.run(["bash", str(SCRIPT), "train.distributed.strategy=fsdp", f"paths.root_dir={tmp_path}", *TINY],
                          env=env, capture_output=True, text=True, timeout=600)  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["steps"] == 8 and summary["final_val_loss"] < summary["first_val_loss"]
    assert summary["sample"].startswith("def ")
    step8 = run_dir / "checkpoints" / "step_00000008"
    assert (step8 / "train-rank00000.pkl").is_file() and (step8 / "train-rank00001.pkl").is_file()
    assert len(list(step8.glob("*.distcp"))) == 2  # each rank wrote its own shards
    # Downstream evals on the FSDP-sharded model: both ranks run every forward, rank 0 writes one record.
    records = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    scored = [r for r in records if r["kind"] == "downstream"]
    assert [r["step"] for r in scored] == [0, 8] and summary["downstream"]["zaya_stdlib_nextline/acc"] >= 0
