"""`zaya ckpt inspect|convert|verify` as a real subprocess of the installed `zaya` command."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ZAYA = shutil.which("zaya") or str(Path(sys.executable).parent / "zaya")


def _zaya(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([ZAYA, "ckpt", *args], capture_output=True, text=True, timeout=240)


@pytest.mark.slow
def test_inspect_convert_verify(tmp_path: Path, src_dcp: Path):
    if not Path(ZAYA).exists():
        pytest.skip("the `zaya` command is not installed (pip install -e tools/zaya-cli)")
    shown = _zaya("inspect", str(src_dcp), "--limit", "3")
    assert shown.returncode == 0, shown.stderr
    assert "format: dcp" in shown.stdout and "embed_tokens.weight" in shown.stdout and "bfloat16" in shown.stdout
    dst = tmp_path / "out.zarr"
    done = _zaya("convert", str(src_dcp), str(dst), "--to", "zarr", "--layout", "dp=4,ep=4,fsdp=1")
    assert done.returncode == 0, done.stderr
    assert "layout dp=4,tp=1,pp=1,ep=4,fsdp=1" in done.stdout
    again = _zaya("convert", str(src_dcp), str(dst), "--to", "zarr")
    assert again.returncode == 2 and "already exists; pass --force" in again.stderr
    same = _zaya("verify", str(src_dcp), str(dst))
    assert same.returncode == 0 and "logical comparison: OK" in same.stdout
