"""The README's example runs as written (in a fresh interpreter, its /tmp paths moved under tmp_path)."""

import re
import subprocess
import sys
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def test_readme_example_runs(tmp_path: Path):
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.S)
    assert blocks, "the README has no Python example"
    code = "\n".join(blocks).replace("/tmp/", f"{tmp_path}/")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "8.30B total, 754M active" in done.stdout  # the counts the README states
    cp_loss, plain_loss = re.search(r"([\d.]+) == ([\d.]+)", done.stdout).groups()
    assert cp_loss == plain_loss  # the context-parallel loss is the unsplit one (5 decimals)
    ep_loss, plain_loss = re.findall(r"([\d.]+) == ([\d.]+)", done.stdout)[1]
    assert ep_loss == plain_loss  # and the expert-parallel one
    assert "ep 8, 8 x 4096 tokens: 26.5 GB per rank" in done.stdout
    assert "cp 8 at 32k: 2.19 GiB per rank" in done.stdout
    assert (tmp_path / "zaya-tiny" / "config.json").is_file()
