"""The README's Python examples and commands run as written (in a fresh interpreter / bash, /tmp paths moved
under tmp_path, the embedding cache shared with the session), one test per block so that no test runs every
block in turn. The install block is left to the packaging test."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from manta.evaluation.world_eval import WORLD_JUDGE

README = Path(__file__).resolve().parents[1] / "README.md"


def _blocks(kind: str) -> list[str]:
    text = README.read_text(encoding="utf-8")
    return [b for b in re.findall(rf"```{kind}\n(.*?)```", text, re.S) if "pip install" not in b]


def _env(cache_dir: Path) -> dict[str, str]:
    return {
        **os.environ,
        "ZAYA_CACHE": str(cache_dir),
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
    }


PYTHON, BASH = _blocks("python"), _blocks("bash")


def test_readme_has_the_examples_and_commands():
    assert len(PYTHON) >= 2
    assert BASH and any("zaya manta eval" in b for b in BASH)
    assert any("zaya manta world build" in b for b in BASH)


@pytest.mark.slow
@pytest.mark.parametrize("block", range(len(PYTHON)), ids=[f"python-{i}" for i in range(len(PYTHON))])
def test_readme_python_examples_run(block, tmp_path, cache_dir):
    """Each example in its own fresh interpreter (and test: the examples do not share state)."""
    code = PYTHON[block].replace("/tmp/", f"{tmp_path}/")
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=600, cwd=tmp_path, env=_env(cache_dir)
    )
    assert done.returncode == 0, done.stderr[-3000:]
    if "render_batch" in code:
        assert any((tmp_path / "manta-tiny" / "images").iterdir())


@pytest.mark.slow
@pytest.mark.parametrize("block", range(len(BASH)), ids=[f"bash-{i}" for i in range(len(BASH))])
def test_readme_commands_run(block, tmp_path, cache_dir):
    """Each bash block as one script, as written; then every file its commands say they write is checked."""
    script = BASH[block].replace("/tmp/", f"{tmp_path}/")
    done = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", script],
        capture_output=True,
        text=True,
        timeout=1500,
        cwd=tmp_path,
        env=_env(cache_dir),
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    if "zaya manta eval" in script:
        for folder in ("eval", "eval-smoke", "eval-coco"):
            assert (tmp_path / folder / "winrates.json").is_file()
            assert (tmp_path / folder / "winrates.png").read_bytes()[:4] == b"\x89PNG"
        world = json.loads((tmp_path / "eval" / "winrates.json").read_text())  # the world evaluation's command line
        assert world["judge"] == WORLD_JUDGE and world["prompts"] == 4 and world["hardware"] == "tiny-cpu"
        assert set(world["controls"]) == {"prompt-blind", "random-relevant"}
        assert (tmp_path / "plans.json").is_file()
    for folder in re.findall(r"zaya manta world build (\S+)", script):
        assert (Path(folder) / "manifest.json").is_file()
