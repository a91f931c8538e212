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


@pytest.mark.slow
def test_readme_eval_commands_and_example_run(eval_run, tmp_path):
    run = shutil.copytree(eval_run, tmp_path / "outputs" / "pretrain" / "2026-12-03" / "10-00-00")
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
    (python,) = re.findall(r"```python\n(.*?)```", _section(), re.S)
    done = subprocess.run(
        [sys.executable, "-c", python.replace("RUN_DIR", str(run))],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "'zaya_stdlib_nextline/acc':" in done.stdout
