"""`zaya memsim cosim ...` refuses bad input with a one-line error before building anything."""

import subprocess
import sys
from pathlib import Path

import pytest

ZAYA = [sys.executable, "-m", "zaya_cli.app", "memsim", "cosim"]


@pytest.mark.slow
@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["axi-check", "--data-bits", "48"], "--data-bits 48: choose 32, 64, 128, 256 or 512"),
        (["axi-check", "--ratio", "0"], "design:memory clock ratio = '0' must be positive"),
        (["simdram", "ddr9_nonexistent"], "ddr9_nonexistent"),
    ],
)  # fmt: skip
def test_bad_input_is_named(tmp_path: Path, args: list[str], message: str) -> None:
    done = subprocess.run([*ZAYA, *args, "-o", str(tmp_path / "out")], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    assert message in " ".join(done.stderr.split())
    assert not (tmp_path / "out" / "build").exists()
