"""The README's context-parallel command: `torchrun --nproc_per_node 2 services/pretrain/main.py
train.distributed.context_parallel=2` trains the main job's model (zaya1-tiny, recipe tiny-cpu: 128 then 256
tokens per sequence) with every sequence split over two gloo processes, and its losses are one process's."""

import json
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from readme_blocks import shell_blocks

MAIN = Path(__file__).resolve().parents[1] / "main.py"
START = "torchrun --standalone --nproc_per_node 2 services/pretrain/main.py train.distributed.context_parallel=2"
TINY = [
    "recipe.phases.0.tokens=8192",  # 4 steps of 16 x 128
    "recipe.phases.1.tokens=8192",  # 2 steps of 16 x 256
    "train.data.sources.library.max_files=40",
    "train.data.sources.tests.max_files=40",
    "train.data.val_fraction=0.15",
    "train.eval.every_steps=3",
    "train.eval.sequences=4",
    "train.eval.sample_tokens=8",
    "train.eval.downstream.limit=8",  # lm-eval runs on the unsplit model (context_parallel_off) in between
    "train.checkpoint.every_steps=3",
    "train.plots=false",
    "logging.log_every_steps=1",
]


def _readme_command() -> list[str]:
    (command,) = [c for b in shell_blocks() if b.readme == "services/pretrain/README.md" for c in b.commands
                  if c.startswith(START)]  # fmt: skip
    argv = shlex.split(command)
    assert argv[:2] == ["torchrun", "--standalone"] and argv[4] == "services/pretrain/main.py"
    return [sys.executable, "-m", "torch.distributed.run", *argv[1:4], str(MAIN), *argv[5:]]


def _records(run_dir: Path, kind: str) -> list[dict]:
    lines = (run_dir / "metrics.jsonl").read_text().splitlines()
    return [r for r in map(json.loads, lines) if r["kind"] == kind]


@pytest.mark.slow
@pytest.mark.distributed
def test_readme_context_parallel_command_matches_one_process(tmp_path):
    def run(cmd: list[str]) -> None:
        proc = subprocess.run([*cmd, f"paths.root_dir={tmp_path}", *TINY], cwd=tmp_path, capture_output=True,
                              text=True, timeout=900)  # fmt: skip
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]

    run(_readme_command())
    run([sys.executable, str(MAIN), "hydra.run.dir=outputs/pretrain/one"])
    cp2, one = tmp_path / "outputs/pretrain/cp2", tmp_path / "outputs/pretrain/one"
    assert [(r["name"], r["context_parallel"]) for r in _records(cp2, "phase")] == [("pretrain", 2), ("extend", 2)]
    got, want = ([r["loss"] for r in _records(d, "train")] for d in (cp2, one))
    assert len(got) == len(want) == 6 and got == pytest.approx(want, rel=1e-5)
    got, want = ([r["val_loss"] for r in _records(d, "val")] for d in (cp2, one))
    assert got == pytest.approx(want, rel=1e-5)
    # the downstream scores, computed between steps on the whole sequences, are one process's too
    got, want = (json.loads((d / "summary.json").read_text())["downstream"] for d in (cp2, one))
    assert got == pytest.approx(want, rel=1e-5)
    assert (cp2 / "checkpoints/step_00000006/train-rank00001.pkl").is_file()
