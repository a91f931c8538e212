"""The installed `zaya` console script, run as a real subprocess."""

import shutil
import subprocess
import sys
from importlib.metadata import entry_points
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


def test_run_becomes_the_service_so_a_kill_reaches_it(tmp_path, monkeypatch):
    """`zaya run` replaces itself with the service (same PID): a SIGKILL aimed at the launcher's PID kills the
    trainer too. A child process would be orphaned and run on beside a restarted attempt (seen on the H200)."""
    service = tmp_path / "services" / "pid"
    service.mkdir(parents=True)
    (service / "main.py").write_text("import os\nprint('PID', os.getpid())\n")
    monkeypatch.setenv("ZAYA_SERVICES_DIR", str(tmp_path / "services"))
    assert ZAYA
    proc = subprocess.Popen([ZAYA, "run", "pid"], stdout=subprocess.PIPE, text=True)
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode == 0 and f"PID {proc.pid}" in out


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


# Libraries that cost a second or more to import; no group's help may pay for them.
HEAVY = {"torch", "transformers", "sentence_transformers", "diffusers", "numba", "zarr", "scipy", "matplotlib",
         "pandas", "pyarrow", "datasets", "lm_eval", "cocotb", "safetensors", "tokenizers"}  # fmt: skip
# Lighter, but not needed to print a group's help either.
LIGHT_BUT_UNNEEDED = {"numpy", "hydra", "omegaconf", "yaml"}
# `zaya lm-eval --help` is lm-eval's own help: lm-eval (numpy, yaml) must load to print it, torch need not.
OWN_HELP_NEEDS = {"lm-eval": {"lm_eval", "numpy", "yaml"}}


@pytest.mark.parametrize("group", sorted(ep.name for ep in entry_points(group="zaya.cli")))
def test_group_help_imports_no_heavy_library(group):
    """`zaya <group> --help` for every installed group: its sub-app loads, the libraries its commands use do not."""
    modules = _imported_modules(group, "--help")
    assert any(m.endswith("cli") for m in modules), "the group's module was not even loaded"
    unexpected = (modules & (HEAVY | LIGHT_BUT_UNNEEDED)) - OWN_HELP_NEEDS.get(group, set())
    assert not unexpected, f"`zaya {group} --help` imports {sorted(unexpected)}; move them inside the commands"


def test_memsim_run_imports_only_what_the_simulation_needs(tmp_path):
    """A small trace run pays for numpy, the config reader and the compiled engine, not for torch or Hydra."""
    trace = tmp_path / "small.trace"
    assert zaya("memsim", "trace", "ddr4_8gb_x8_3200", "-o", str(trace), "-n", "200").returncode == 0
    modules = _imported_modules("memsim", "run", "ddr4_8gb_x8_3200", str(trace), "-c", "2000", "-o",
                                str(tmp_path / "out"), "--no-plots")  # fmt: skip
    assert "numpy" in modules
    unneeded = {"torch", "transformers", "sentence_transformers", "diffusers", "zarr", "matplotlib", "pandas",
                "hydra", "omegaconf", "lm_eval", "cocotb", "tokenizers"}  # fmt: skip
    assert not modules & unneeded, sorted(modules & unneeded)


def test_root_help_shows_each_groups_own_help_line():
    result = zaya("--help")
    text = " ".join(result.stdout.split())
    assert "Prepare training data: text -> zarr token shards (from zaya-train)" in text
    assert "List and show hardware profiles" in text and "Compose and print configs" in text
