"""The README's downstream-evaluation commands and Python example run as written, on a run dir where the
main job leaves one (`outputs/pretrain/<date>/<time>`)."""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("lm_eval")
README = Path(__file__).resolve().parents[1] / "README.md"


def _section() -> str:
    text = README.read_text(encoding="utf-8")
    return text.split("## Downstream evaluation", 1)[1].split("\n## ", 1)[0]


def _copy_run(eval_run: Path, tmp_path: Path) -> Path:
    """The shared run dir where the main job would leave it (the README's `ls -d outputs/pretrain/*/*`)."""
    return shutil.copytree(eval_run, tmp_path / "outputs" / "pretrain" / "2026-12-03" / "10-00-00")


@pytest.mark.slow
def test_readme_eval_commands_run(eval_run, tmp_path):
    """The section's bash block: `zaya eval`, `zaya lm-eval` and a standard lm-eval task given offline."""
    run = _copy_run(eval_run, tmp_path)
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    (bash,) = re.findall(r"```bash\n(.*?)```", _section(), re.S)
    done = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", bash], capture_output=True, text=True, cwd=tmp_path, env=env, timeout=900
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    assert done.stdout.count("wrote ") == 2 and "|zaya_arith" in done.stdout.replace(" ", "")
    assert set(__import__("json").loads((run / "eval.json").read_text())["tasks"]) == {
        "zaya_stdlib_nextline",
        "zaya_stdlib_idioms",
        "arc_easy",
    }


@pytest.mark.slow
def test_readme_eval_python_example_runs(eval_run, tmp_path, capsys, monkeypatch):
    """The section's Python example (lm-eval's `simple_evaluate` on the `zaya` model), run as written in this
    process (as zaya eval's tests run lm-eval): it reads the run only, so it needs nothing the bash block writes."""
    run = _copy_run(eval_run, tmp_path)
    (python,) = re.findall(r"```python\n(.*?)```", _section(), re.S)
    monkeypatch.chdir(tmp_path)
    exec(compile(python.replace("RUN_DIR", str(run)), str(README), "exec"), {"__name__": "__main__"})
    assert "'zaya_stdlib_nextline/acc':" in capsys.readouterr().out
