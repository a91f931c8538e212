"""The README's API example runs as written (in a fresh interpreter, its /tmp paths moved under tmp_path), and so
does its CLI block (tests/test_readme_commands.py leaves the block to this file)."""

import re
import shlex
import subprocess
import sys
from pathlib import Path

from ckpt_reshape.cli import app
from readme_blocks import run_script_ok, shell_blocks
from typer.testing import CliRunner

README = Path(__file__).resolve().parents[1] / "README.md"
README_PATH = "packages/ckpt-reshape/README.md"  # as readme_blocks names it
WRITE_DEMO = 'python -c "import torch, torch.distributed.checkpoint as dcp; dcp.save('


def test_readme_api_example_runs(tmp_path: Path):
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.S)
    assert blocks, "the README has no Python example"
    code = "\n".join(blocks).replace("/tmp/", f"{tmp_path}/")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "cannot be split 3 ways" in done.stdout  # the example's impossible layout is refused, as it says
    assert (tmp_path / "demo.zarr").is_dir() and not (tmp_path / "bad.dcp").exists()


def test_readme_cli_block_runs_as_written(tmp_path: Path, monkeypatch):
    """The CLI section's block in one folder: its `python -c` line in bash as written, then every `zaya ckpt` line
    (its words, the comment dropped) through the typer app `zaya ckpt` mounts, in this interpreter
    (test_ckpt_reshape_cli.py runs the `zaya` command itself): one interpreter start instead of six."""
    (block,) = [b for b in shell_blocks() if b.readme == README_PATH and b.commands[0].startswith(WRITE_DEMO)]
    write, *commands = block.commands
    run_script_ok(write, tmp_path, timeout=300)
    assert (tmp_path / "demo.dcp").is_dir()
    monkeypatch.chdir(tmp_path)
    out = []
    for command in commands:
        argv = shlex.split(command, comments=True)
        assert argv[:2] == ["zaya", "ckpt"], command
        done = CliRunner().invoke(app, argv[2:])
        assert done.exit_code == 0, (command, done.output)
        out.append(done.stdout)
    assert len(commands) == 5
    inspect, to_ep4, to_zarr, checksums, logical = out
    assert "format: dcp" in inspect and "layers.0.experts.w" in inspect and "embed.weight" in inspect
    assert "wrote demo_ep4.dcp (dcp, layout dp=4,tp=1,pp=1,ep=4,fsdp=1): 2 tensors" in to_ep4
    assert "wrote demo.zarr (zarr, layout dp=4,tp=1,pp=1,ep=4,fsdp=1): 2 tensors" in to_zarr  # the layout kept
    assert "checksums: OK" in checksums and "logical comparison: OK" in logical
