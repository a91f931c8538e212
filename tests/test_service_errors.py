"""The services, started as users start them (`zaya run <service> ...`), end bad input in one line with exit
code 2 (zaya_config.service_main); `--debug` brings the traceback back."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ZAYA = shutil.which("zaya", path=str(Path(sys.executable).parent))


def zaya_run(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([ZAYA, "run", *args, f"hydra.run.dir={tmp_path / 'run'}"], capture_output=True,
                          text=True, cwd=tmp_path, timeout=600)  # fmt: skip


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (["pretrain", "train.micro_batch_size=0"], "error: invalid config: train.micro_batch_size = 0; allowed: a number > 0"),
        (["pretrain", "train.optimizer.lr=1e-3"], "error: Could not override 'train.optimizer.lr'"),
        (["pretrain", "recipe=tiny-cpux"], "error: In 'pretrain': Could not find 'recipe/tiny-cpux'; Available options in 'recipe':"),
        (["compose", "prompt=a samurai in a snowy pass, ukiyo-e"], "error: Ambiguous value for argument 'prompt=a samurai"),
        (["compose", "manta.catalog='models[1].jsonl'"], "error: catalog file models[1].jsonl does not exist"),
        (["memstudy", "memory=hbm9"], "error: In 'memstudy': Could not find 'memory/hbm9'"),
    ],
)  # fmt: skip
def test_bad_input_is_one_clean_line(tmp_path, args, line):
    result = zaya_run(tmp_path, *args)
    assert result.returncode == 2, result.stderr[-3000:]
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(line), result.stderr[-3000:]


def test_debug_shows_the_traceback(tmp_path):
    result = zaya_run(tmp_path, "pretrain", "train.micro_batch_size=0", "--debug")
    assert result.returncode == 1
    assert "Traceback" in result.stderr and "ZayaConfigError: invalid config: train.micro_batch_size" in result.stderr
