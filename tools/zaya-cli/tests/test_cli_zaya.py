"""The installed `zaya` console script, run as a real subprocess."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ZAYA = shutil.which("zaya", path=str(Path(sys.executable).parent))


def zaya(*args: str) -> subprocess.CompletedProcess:
    assert ZAYA, "the zaya console script is not installed in this environment (pip install -e tools/zaya-cli)"
    return subprocess.run([ZAYA, *args], capture_output=True, text=True, timeout=120)


def test_help_lists_installed_command_groups():
    result = zaya("--help")
    assert result.returncode == 0, result.stderr
    assert "config" in result.stdout and "hardware" in result.stdout
    assert "(from zaya-config)" in result.stdout  # each group names the package it comes from


def test_hardware_show_prints_the_profile():
    result = zaya("hardware", "show", "mi300x")
    assert result.returncode == 0, result.stderr
    for line in ("name: mi300x", "vendor: amd", "compute_units: 304", "hbm_bw_gbps: 5300.0", "measured:"):
        assert line in result.stdout


def test_hardware_list_has_every_preset():
    result = zaya("hardware", "list")
    assert result.returncode == 0, result.stderr
    for name in ("cpu", "h200", "mi300x"):
        assert name in result.stdout


def test_config_show_composes_with_overrides():
    result = zaya("config", "show", "hardware=h200", "logging.level=DEBUG")
    assert result.returncode == 0, result.stderr
    assert "name: h200" in result.stdout and "level: DEBUG" in result.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("config", "show", "hardware.compute_units=-2"), "hardware.compute_units = -2; allowed: a number > 0"),
        (("hardware", "show", "tpu"), "unknown hardware profile 'tpu'; allowed: one of cpu, h200, mi300x"),
    ],
)
def test_bad_input_exits_2_with_a_clear_message(args, message):
    result = zaya(*args)
    assert result.returncode == 2
    assert message in " ".join(result.stderr.split())


def test_run_starts_a_service_with_its_overrides_and_exit_code(tmp_path, monkeypatch):
    service = tmp_path / "services" / "echo"
    service.mkdir(parents=True)
    (service / "main.py").write_text("import sys\nprint('ARGS', sys.argv[1:])\nsys.exit(3)\n")
    monkeypatch.setenv("ZAYA_SERVICES_DIR", str(tmp_path / "services"))
    result = zaya("run", "echo", "a=1", "-m", "b=2,3")
    assert result.returncode == 3
    assert "ARGS ['a=1', '-m', 'b=2,3']" in result.stdout
    listed = zaya("run", "--list")
    assert listed.returncode == 0 and listed.stdout.startswith("echo\t")
    missing = zaya("run", "nope")
    assert (
        missing.returncode == 2 and "unknown service 'nope'" in missing.stderr and "available: echo" in missing.stderr
    )


def _imported_modules(*args: str) -> set[str]:
    """Top-level modules the `zaya` console script imports for `args` (python -X importtime)."""
    result = subprocess.run([sys.executable, "-X", "importtime", ZAYA, *args], capture_output=True, text=True,
                            timeout=120)  # fmt: skip
    assert result.returncode == 0, result.stderr[-2000:]
    return {line.rsplit("|", 1)[-1].strip() for line in result.stderr.splitlines() if line.startswith("import time:")}


def test_root_help_imports_no_package_cli_and_no_torch():
    """`zaya --help` lists every group from entry-point metadata and the groups' sources, importing none."""
    modules = _imported_modules("--help")
    assert "torch" not in modules and "hydra" not in modules
    assert not {m for m in modules if m.endswith(".cli")}, sorted(m for m in modules if m.endswith(".cli"))


def test_root_help_shows_each_groups_own_help_line():
    result = zaya("--help")
    text = " ".join(result.stdout.split())
    assert "Prepare training data: text -> zarr token shards (from zaya-train)" in text
    assert "List and show hardware profiles" in text and "Compose and print configs" in text
