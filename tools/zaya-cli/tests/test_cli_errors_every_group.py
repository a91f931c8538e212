"""Every command group ends bad input the same way (zaya_config.cli_errors): `error: <message>` on stderr with
its square brackets intact (rich markup escaped), exit code 2, no traceback. Real `zaya` subprocesses."""

import shutil
import subprocess
import sys
from importlib.metadata import entry_points
from pathlib import Path

import pytest

ZAYA = shutil.which("zaya", path=str(Path(sys.executable).parent))

# group -> (arguments, the message as it must read). Paths with brackets are real: `run[1]`, `log[2].txt` ...
CASES = {
    "bench": (["bench", "parse", "log[2].txt"], "error: no such file: log[2].txt"),
    "ckpt": (["ckpt", "inspect", "ckpt[1]"], "error: ckpt[1]: no such file or folder"),
    "config": (["config", "show", "logging.level=[DEBUG]"], "error: invalid config: logging.level = ['DEBUG']; allowed:"),
    "data": (["data", "prepare", "docs[1]", "--out", "x.zarr"], "error: corpus path docs[1] does not exist"),
    "eval": (["eval", "run[1]", "--tasks", "zaya_arith"], "error: run[1]: no such run dir or HF folder"),
    "hardware": (["hardware", "show", "[tpu]"], "error: unknown hardware profile '[tpu]'; allowed: one of"),
    "manta": (["manta", "compose", "a cat", "--catalog", "cat[1].jsonl"], "error: catalog file cat[1].jsonl does not exist"),
    "memsim": (["memsim", "run", "zero_tck.ini", "-s", "random", "-o", "out"],
               "error: config zero_tck: [timing] tCK = 0.0; give the clock period in ns (> 0)"),
    "model": (["model", "generate", "run[1]", "--prompt", "hi"], "error: run[1]: neither a run dir"),
    "run": (["run", "nope[1]"], "error: unknown service 'nope[1]'"),
}  # fmt: skip
# Groups whose errors are another program's: `zaya lm-eval` is lm-eval's own command line, which prints its errors.
NOT_OURS = {"lm-eval": "lm-eval's own command line and messages"}


def test_every_group_has_a_case():
    groups = {ep.name for ep in entry_points(group="zaya.cli")} | {"run"}
    assert groups <= set(CASES) | set(NOT_OURS), sorted(groups - set(CASES) - set(NOT_OURS))


@pytest.mark.parametrize("group", sorted(CASES))
def test_bad_input_is_one_line_with_its_brackets_and_exit_2(group, tmp_path):
    args, message = CASES[group]
    if group == "memsim":
        ini = subprocess.run([ZAYA, "memsim", "ini", "ddr4_8gb_x8_3200"], capture_output=True, text=True, check=True)
        lines = [("tCK = 0" if line.startswith("tCK") else line) for line in ini.stdout.splitlines()]
        (tmp_path / "zero_tck.ini").write_text("\n".join(lines) + "\n")
    result = subprocess.run([ZAYA, *args], capture_output=True, text=True, cwd=tmp_path, timeout=300)
    text = " ".join(result.stderr.split())
    assert result.returncode == 2, result.stderr[-2000:]
    assert "Traceback" not in result.stderr
    assert message in text, text
    assert text.startswith("error: ") and text.count("error: ") == 1
