"""End to end: the pretrain service as a real subprocess on CPU, a tiny override of the main job's config; the
README's main job runs here as written (tests/test_readme_commands.py leaves it to this file)."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
from readme_blocks import TINY_PRETRAIN, checkout_workdir, run_script_ok, sized_command

MAIN = Path(__file__).resolve().parents[1] / "main.py"
# The main job's config, shrunk (the same overrides test_readme_commands.py appends to the README's commands).
TINY = TINY_PRETRAIN.split()
# The README's main job, no override (two spaces: then its comment), shrunk by TINY as test_readme_commands would.
MAIN_JOB = sized_command("services/pretrain/README.md", "python services/pretrain/main.py  ")


def _run(root: Path, *overrides: str, flags: tuple[str, ...] = ()) -> subprocess.CompletedProcess:
    proc = subprocess.run(
        [sys.executable, str(MAIN), *flags, f"paths.root_dir={root}", *TINY, *overrides],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc


def _records(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]


@pytest.mark.slow
def test_pretrain_trains_checkpoints_samples_and_leaves_the_run_dir(tmp_path):
    """The README's main job as written (shrunk by TINY), in a folder that looks like the checkout."""
    work = checkout_workdir(tmp_path)
    proc = run_script_ok(MAIN_JOB, work, timeout=600)
    (run_dir,) = (work / "outputs" / "pretrain").glob("*/*")
    assert "--- sample after 28 steps" in proc.stdout and f"run dir: {run_dir}" in proc.stdout
    vals = [r["val_loss"] for r in _records(run_dir) if r["kind"] == "val"]
    assert vals[-1] < 0.75 * vals[0], vals  # validation loss falls clearly (from ~ln(257) = 5.5)
    phases = [(r["name"], r["seq_len"]) for r in _records(run_dir) if r["kind"] == "phase"]
    assert phases == [("pretrain", 128), ("extend", 256)]
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["steps"] == 28 and summary["sample"].startswith("def ")
    for name in ("config.yaml", "metrics.jsonl", "loss.png", "expert_load.png", "downstream.png", "checkpoints/latest"):
        assert (run_dir / name).is_file(), name
    assert (run_dir / "tokenizer" / "tokenizer.json").is_file()  # the run's own tokenizer travels with it
    # The main job's downstream eval (lm-eval, zaya_stdlib_nextline): scored at the first and the last step,
    # and already above the untrained model's score after 28 steps.
    scores = [(r["step"], r["zaya_stdlib_nextline/acc"]) for r in _records(run_dir) if r["kind"] == "downstream"]
    assert [step for step, _ in scores] == [0, 28] and scores[1][1] > scores[0][1], scores
    assert summary["downstream"]["zaya_stdlib_nextline/acc"] == scores[1][1]
    assert (run_dir / "checkpoints" / "step_00000028" / "manifest.json").is_file()
    assert "optimizer:" in (run_dir / "config.yaml").read_text()  # resolved, defaults filled in
    # The same command on the same run dir resumes from the latest checkpoint: nothing left to train.
    again = run_script_ok(f"{MAIN_JOB} hydra.run.dir={run_dir} train.eval.sample_tokens=0", work, timeout=600)
    assert "resumed from step 28" in again.stdout + again.stderr
    assert [r["step"] for r in _records(run_dir) if r["kind"] == "train"][-1] == 28
    assert [r["step"] for r in _records(run_dir) if r["kind"] == "downstream"] == [0, 28]  # not scored again


@pytest.mark.slow
def test_pretrain_multirun_over_two_seeds(tmp_path):
    _run(
        tmp_path,
        "train.seed=0,1",
        "recipe.phases.0.tokens=8192",
        "recipe.phases.1.tokens=4096",
        "train.eval.sample_tokens=0",
        "train.plots=false",
        flags=("-m",),
    )
    runs = sorted((tmp_path / "outputs" / "pretrain" / "multirun").glob("*/*/*/summary.json"))
    assert len(runs) == 2
    finals = [json.loads(p.read_text())["final_val_loss"] for p in runs]
    assert finals[0] != finals[1]  # different seeds, different runs


def test_bad_config_fails_at_start_naming_the_key(tmp_path):
    proc = subprocess.run(
        [sys.executable, str(MAIN), f"paths.root_dir={tmp_path}", "recipe.phases.0.seq_len=4096"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode != 0
    assert "seq_len 4096 exceeds the model's 256 positions" in proc.stderr
    assert not list((tmp_path / "outputs").rglob("metrics.jsonl"))  # no step ran


@pytest.mark.parametrize(("train", "micro_batch"), [("h200", 8), ("h200-full-depth", 2)])
def test_the_h200_presets_compose_into_a_valid_main_job(train, micro_batch):
    """What `zaya run pretrain model=zaya1-base hardware=h200 train=... recipe=h200-stdlib` composes on a GPU:
    the full 40-layer zaya1-base at micro-batch 2 (measured to fit one H200, zaya-train BENCHMARKS.md)."""
    from hydra import compose, initialize_config_dir
    from zaya_config import validate_config

    overrides = ["model=zaya1-base", "hardware=h200", f"train={train}", "recipe=h200-stdlib"]
    with initialize_config_dir(config_dir=str(MAIN.parent / "conf"), version_base="1.3"):
        cfg = validate_config(compose(config_name="pretrain", overrides=overrides))
    assert cfg["model"].num_hidden_layers == 40
    t = cfg["train"]
    assert (t.micro_batch_size, t.global_batch_size, t.activation_checkpointing) == (micro_batch, 64, "full")
    assert (t.optimizer.name, t.precision, t.compile) == ("muon", "bf16", True)
