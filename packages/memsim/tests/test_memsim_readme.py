"""The README's commands and Python examples run as written (in a temporary folder; `zaya memsim` is memsim's
typer app in this interpreter, which `zaya` mounts (test_memsim_cli.py runs `zaya` itself), `../shared` the
shared reference data beside the checkout)."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"
SHARED = Path(__file__).resolve().parents[3].parent / "shared"


def _commands() -> list[str]:
    """The `zaya memsim ...` lines of the README's bash blocks (the install block is left out)."""
    text = README.read_text()
    rtl = text.index("## Generated RTL")  # its commands build Verilator models and run yosys: test_memsim_rtl.py
    text = text[:rtl] + text[text.index("\n## ", rtl + 1) :]
    blocks = re.findall(r"```bash\n(.*?)```", text, re.S)
    lines = [line.split("  #")[0].strip() for block in blocks for line in block.splitlines()]
    return [line for line in lines if line.startswith("zaya memsim")]


def _run(command: str, cwd: Path) -> None:
    """One README line, `zaya memsim` being memsim's app in this interpreter, in bash."""
    memsim = f"{sys.executable} -c 'from memsim.cli import app; app()'"
    line = command.replace("zaya memsim", memsim, 1).replace("../shared", str(SHARED))
    env = {**os.environ, "COLUMNS": "200"}
    done = subprocess.run(["bash", "-c", line], cwd=cwd, capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 0, (command, done.stderr[-2000:])


@pytest.mark.slow
@pytest.mark.skipif(not (SHARED / "reference" / "dramsim3-configs").is_dir(), reason=f"no {SHARED}/reference")
@pytest.mark.parametrize("group", ["runs", "cosim"])
def test_readme_commands_and_examples_run(tmp_path: Path, group: str) -> None:
    """In two groups that run apart: its `zaya memsim cosim` lines; its other lines, in order, then its Python
    examples (which read what those lines wrote)."""
    commands = _commands()
    assert len(commands) >= 8, "the README's command list"
    for command in [c for c in commands if c.startswith("zaya memsim cosim ") == (group == "cosim")]:
        _run(command, tmp_path)
    if group == "cosim":
        return
    assert (tmp_path / "out" / "stats.json").is_file() and (tmp_path / "out_gen" / "stats.json").is_file()
    code = "\n".join(re.findall(r"```python\n(.*?)```", README.read_text(), re.S))
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "row_buf_policy = 'OPEN_PAEG' is not one of OPEN_PAGE" in done.stdout
    assert "config typo.ini has 1 problem(s) (strict)" in done.stdout
