"""`zaya memsim ...` as a person runs it: real subprocesses, real files."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ZAYA = [sys.executable, "-m", "zaya_cli.app"]


def _zaya(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "COLUMNS": "200"}  # rich tables at full width
    return subprocess.run([*ZAYA, "memsim", *args], capture_output=True, text=True, timeout=300, env=env)


@pytest.mark.slow
def test_run_writes_dramsim3_stats(reference_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    cfg = reference_dir / "configs" / "HBM2_8Gb_x128.ini"
    trace = reference_dir / "traces" / "rand_read_gap200_1k.trace"
    proc = _zaya("run", str(cfg), str(trace), "--cycles", "259800", "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    ours = json.loads((out / "stats.json").read_text())
    ref = json.loads((reference_dir / "runs" / "rand_read_gap200_1k__HBM2_8Gb_x128" / "dramsim3.json").read_text())
    assert ours.keys() == ref.keys()
    for ch in ref:
        assert ours[ch].keys() == ref[ch].keys()
        assert ours[ch]["num_reads_done"] == ref[ch]["num_reads_done"]
        assert ours[ch]["average_read_latency"] == pytest.approx(ref[ch]["average_read_latency"])
    assert (out / "read_latency.png").stat().st_size > 1000
    assert json.loads((out / "epochs.json").read_text())[0]["num_cycles"] > 0


# The other commands run in-process through typer's runner: the `zaya` process start (every installed
# package's CLI is imported) costs more than the commands themselves.
def _memsim(*args: str):
    from memsim.cli import app
    from typer.testing import CliRunner

    return CliRunner().invoke(app, list(args), env={"COLUMNS": "200"})


def test_configs_and_check() -> None:
    result = _memsim("configs")
    assert result.exit_code == 0 and "hbm3_16gb_pc" in result.output
    result = _memsim("check", "lpddr4_8gb_x16_2400", "--requests", "800", "--cycles", "20000")
    assert result.exit_code == 0, result.output
    assert "0 violations" in result.output


def test_bad_trace_is_a_clear_error(tmp_path: Path) -> None:
    trace = tmp_path / "bad.trace"
    trace.write_text("0x40 READ 0\n0x80 READ soon\n")
    result = _memsim("run", "ddr4_8gb_x8_3200", str(trace), "-o", str(tmp_path / "o"))
    assert result.exit_code == 2
    assert "bad.trace:2: malformed trace line '0x80 READ soon'" in result.output.replace("\n", "")
    assert not (tmp_path / "o").exists()


def test_config_notes_keep_their_brackets_and_strict_refuses(tmp_path: Path) -> None:
    ini = _memsim("ini", "ddr4_8gb_x8_3200")
    assert ini.exit_code == 0 and "[timing]" in ini.output
    cfg = tmp_path / "part.ini"
    cfg.write_text(ini.output.replace("row_buf_policy = OPEN_PAGE", "row_buf_policy = CLOSE_PAGEE").replace(
        "tREFI = ", "REFI = "))  # fmt: skip
    trace = tmp_path / "t.trace"
    trace.write_text("0x40 READ 0\n0x1000 WRITE 3\n")
    result = _memsim("run", str(cfg), str(trace), "-c", "2000", "-o", str(tmp_path / "o"), "--no-plots")
    text = result.output.replace("\n", "")
    assert result.exit_code == 0, result.output
    assert "config: part.ini:" in text and "[system] row_buf_policy = 'CLOSE_PAGEE' is not one of OPEN_PAGE" in text
    assert "[timing] not set, DRAMSim3's defaults used: tREFI = 7800" in text  # bracketed text survives rich
    strict = _memsim("run", str(cfg), str(trace), "-c", "2000", "-o", str(tmp_path / "s"), "--strict")
    assert strict.exit_code == 2 and not (tmp_path / "s").exists()
    assert "error: config part.ini has 2 problem(s) (strict): part.ini:" in strict.output.replace("\n", "")
    assert "[timing] REFI is not a key DRAMSim3 reads (did you mean tREFI?)" in strict.output.replace("\n", "")


def test_keys_lists_what_is_allowed() -> None:
    result = _memsim("keys", "system")
    assert result.exit_code == 0 and "[system]" in result.output
    assert "row_buf_policy" in result.output and "CLOSE_PAGE" in result.output


def test_traces_as_users_have_them(tmp_path: Path) -> None:
    trace = tmp_path / "t.trace"
    made = _memsim("trace", "ddr4_8gb_x8_3200", "-o", str(trace), "--kind", "stream", "-n", "500", "--seed", "3")
    assert made.exit_code == 0 and len(trace.read_text().splitlines()) == 500
    wide = tmp_path / "pin.trace"
    wide.write_text("0x7fff5a0012c0 READ 0\n0xffffffff00000040 WRITE 4\n")
    refused = _memsim("run", "ddr4_8gb_x8_3200", str(wide), "-c", "1000", "-o", str(tmp_path / "r"))
    assert refused.exit_code == 2 and "--wrap" in refused.output.replace("\n", "")
    wrapped = _memsim("run", "ddr4_8gb_x8_3200", str(wide), "-c", "1000", "-o", str(tmp_path / "w"), "--wrap",
                      "--no-plots")  # fmt: skip
    assert wrapped.exit_code == 0, wrapped.output
    assert json.loads((tmp_path / "w" / "stats.json").read_text())["0"]["num_writes_done"] == 1
    ramulator = tmp_path / "ram.trace"
    ramulator.write_text("R 0,0,1,2,30,4\nW 0,1,0,0,9,1\n")
    run = _memsim("run", "ddr4_8gb_x8_3200", str(ramulator), "-c", "1000", "-o", str(tmp_path / "m"), "--no-plots")
    stats = json.loads((tmp_path / "m" / "stats.json").read_text())["0"]
    assert run.exit_code == 0 and (stats["num_reads_done"], stats["num_writes_done"]) == (1, 1)
    gen = _memsim("run", "hbm2_8gb_x128", "-s", "stream", "-c", "3000", "-o", str(tmp_path / "s"), "--no-plots")
    assert gen.exit_code == 0 and (tmp_path / "s" / "stats.json").is_file()
    both = _memsim("run", "hbm2_8gb_x128", str(trace), "-s", "random", "-o", str(tmp_path / "b"))
    assert both.exit_code == 2 and "not both and not neither" in both.output
