"""`zaya eval` and `zaya lm-eval` on a trained run dir: `zaya lm-eval` as a real subprocess of the `zaya` CLI;
`zaya eval` in-process, on the same typer app the `zaya` command mounts (typer's runner), since
`test_eval_readme.py` runs the README's `zaya eval` commands as real subprocesses of that command."""

import json
import shutil
import subprocess
import sys

import pytest

pytest.importorskip("lm_eval")


def _zaya(*args: str, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "zaya_cli.app", *args], capture_output=True, text=True, timeout=600, cwd=cwd
    )


@pytest.fixture
def run_copy(eval_run, tmp_path):
    """The shared run dir, copied: these tests write eval.json into it."""
    return shutil.copytree(eval_run, tmp_path / "run")


def _eval_in_process(*args: str):
    """`zaya eval ARGS` on the typer app the `zaya` command mounts, in this process: its result."""
    from typer.testing import CliRunner
    from zaya_train.evals.cli import eval_app

    return CliRunner().invoke(eval_app, list(args))


@pytest.mark.slow
def test_zaya_eval_prints_the_table_and_merges_eval_json(run_copy):
    first = _eval_in_process(
        str(run_copy), "--tasks", "zaya_stdlib_nextline,zaya_arith", "--limit", "6", "--device", "cpu"
    )
    assert first.exit_code == 0, (first.output[-3000:], first.exception)
    assert f"{run_copy} (step 32, zaya1-tiny, cpu)" in first.stdout
    for name in ("|zaya_stdlib_nextline|", "|zaya_arith", "|acc ", "|exact_match|"):
        assert name.replace(" ", "") in first.stdout.replace(" ", ""), name
    record = json.loads((run_copy / "eval.json").read_text())
    assert set(record["tasks"]) == {"zaya_stdlib_nextline", "zaya_arith"}
    nextline = record["tasks"]["zaya_stdlib_nextline"]
    assert nextline["n_samples"] == 6 and nextline["step"] == 32 and nextline["limit"] == 6
    assert 0 <= nextline["scores"]["acc"] <= 1 and record["tasks"]["zaya_arith"]["n_shot"] == 3
    assert record["subject"]["rope_theta"] == 1e5 and record["subject"]["tokenizer"]["kind"] == "byte"

    # Another task at an earlier checkpoint joins the file; the earlier entries stay.
    second = _eval_in_process(str(run_copy), "-t", "zaya_stdlib_ppl", "--limit", "2", "--step", "16", "--device", "cpu")
    assert second.exit_code == 0, (second.output[-3000:], second.exception)
    tasks = json.loads((run_copy / "eval.json").read_text())["tasks"]
    assert set(tasks) == {"zaya_stdlib_nextline", "zaya_arith", "zaya_stdlib_ppl"}
    assert tasks["zaya_stdlib_ppl"]["step"] == 16 and tasks["zaya_stdlib_nextline"] == nextline
    assert tasks["zaya_stdlib_ppl"]["scores"]["bits_per_byte"] > 0


def test_zaya_eval_errors_are_one_line_and_name_the_problem(run_copy, tmp_path):
    """The messages and exit codes."""
    missing = _eval_in_process(str(tmp_path / "nowhere"), "--tasks", "zaya")
    typo = _eval_in_process(str(run_copy), "--tasks", "zaya_stdlib_nextlin", "--device", "cpu")
    empty = _eval_in_process(str(run_copy), "--tasks", " , ")
    assert missing.exit_code == typo.exit_code == empty.exit_code == 2
    assert "no such run dir or HF folder" in missing.output
    assert "unknown task(s) zaya_stdlib_nextlin; zaya's own tasks: zaya, zaya_arith" in typo.output
    assert "--tasks is empty" in empty.output
    assert not any(r.exception and not isinstance(r.exception, SystemExit) for r in (missing, typo, empty))
    assert not (run_copy / "eval.json").exists()


@pytest.mark.slow
def test_lm_evals_own_command_line_runs_the_zaya_model(run_copy, tmp_path):
    done = _zaya(
        "lm-eval",
        "--model",
        "zaya",
        "--model_args",
        f"path={run_copy}",
        "--tasks",
        "zaya_stdlib_nextline",
        "--limit",
        "4",
        "--device",
        "cpu",
        "--output_path",
        str(tmp_path / "out"),
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "zaya_stdlib_nextline" in done.stdout and "acc" in done.stdout
    (written,) = (tmp_path / "out").rglob("results_*.json")
    results = json.loads(written.read_text())
    assert results["config"]["model"] == "zaya" and results["n-samples"]["zaya_stdlib_nextline"]["effective"] == 4
