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
        (["axi-check", "--memory", "foo"], "--memory foo: choose memsim or rtl"),
        (["axi-check", "--memory", "rtl", "--data-bits", "24"], "data width 24: choose a power of two"),
        (["axi-check", "--memory", "rtl", "--ratio", "3/2"], "--ratio 3/2: the generated RTL runs at the memory clock"),
        (["axi-check", "--memory", "rtl", "--simulator", "icarus"], "--memory rtl runs the generated RTL under Verilator"),
        (["axi-check", "--simulator", "vcs"], "--simulator vcs: choose icarus or verilator"),
    ],
)  # fmt: skip
def test_bad_input_is_named(tmp_path: Path, args: list[str], message: str) -> None:
    done = subprocess.run([*ZAYA, *args, "-o", str(tmp_path / "out")], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    assert message in " ".join(done.stderr.split())
    assert not (tmp_path / "out" / "build").exists()


@pytest.mark.slow
@pytest.mark.parametrize(
    ("system", "mode", "missing"),
    [
        ("enable_self_refresh = true", None, "self-refresh or power-down"),
        ("aggressive_precharging_enabled = true", "jedec", "aggressive precharging (jedec mode)"),
    ],
)  # fmt: skip
def test_simdram_refuses_a_part_the_native_engine_does_not_model(tmp_path: Path, system: str, mode: str | None,
                                                                 missing: str) -> None:  # fmt: skip
    """A DRAMSim3 file asking for what the native engine leaves to the Python engine: one line naming it, and no
    library or config written."""
    from memsim.ini_file import format_ini
    from memsim.presets import preset_sections

    ini = tmp_path / "ddr4.ini"
    ini.write_text(format_ini(preset_sections("ddr4_8gb_x8_3200")).replace("[system]", f"[system]\n{system}"))
    args = ["simdram", str(ini), *(["--mode", mode] if mode else [])]
    done = subprocess.run([*ZAYA, *args, "-o", str(tmp_path / "out")], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1
    assert f"native engine (like its compiled engine) does not model {missing}; turn it off" in errors[0]
    assert not (tmp_path / "out").exists()


@pytest.mark.slow
def test_simdram_strict_names_a_misspelt_value(tmp_path: Path) -> None:
    from memsim.ini_file import format_ini
    from memsim.presets import preset_sections

    ini = tmp_path / "ddr4.ini"
    ini.write_text(format_ini(preset_sections("ddr4_8gb_x8_3200")).replace("OPEN_PAGE", "CLOSE_PAGEE"))
    done = subprocess.run([*ZAYA, "simdram", str(ini), "--strict", "-o", str(tmp_path / "out")], capture_output=True,
                          text=True, timeout=120)  # fmt: skip
    assert done.returncode == 2
    assert "CLOSE_PAGEE" in done.stderr and "[system]" in done.stderr  # markup escaped: the section reads as written
    assert not (tmp_path / "out").exists()
