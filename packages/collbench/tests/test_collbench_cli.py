"""`zaya bench size|merge|nccl` in process (typer's runner), with real files."""

from collbench import parse_nccl_tests_file
from collbench.cli import app
from collbench.results_io import write_results
from typer.testing import CliRunner


def test_size_command_writes_the_recommended_config(tmp_path):
    result = CliRunner().invoke(app, ["size", str(tmp_path), "sizing.num_experts=[2,4]", "sizing.top_k=[1]"])
    assert result.exit_code == 0, result.output
    assert "recommended:" in result.output and (tmp_path / "recommended_model.yaml").exists()


def test_size_command_reports_bad_overrides(tmp_path):
    result = CliRunner().invoke(app, ["size", str(tmp_path), "sizing.top_k=[0]"])
    assert result.exit_code == 2 and "sizing.top_k[0] = 0" in result.output


def test_size_command_says_the_measured_mode_needs_the_service(tmp_path):
    result = CliRunner().invoke(app, ["size", str(tmp_path), "sizing.measure=true"])
    assert result.exit_code == 2 and "zaya run size" in result.output
    assert not (tmp_path / "recommended_model.yaml").exists()


def test_merge_command(fixture_path, tmp_path):
    rows = parse_nccl_tests_file(fixture_path("rccl_tests_mi300x_8gpu_allreduce.txt"))[0].results
    write_results(rows[:4], tmp_path / "0")
    write_results(rows[4:10], tmp_path / "1")
    result = CliRunner().invoke(app, ["merge", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert "merged 10 rows from 2 job(s)" in result.output
    assert (tmp_path / "merged" / "plots" / "busbw_all_reduce.png").exists()


def test_nccl_command_without_binaries_fails_clearly(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    result = CliRunner().invoke(app, ["nccl", "--op", "all_gather", "-o", str(tmp_path)])
    assert result.exit_code == 2 and "'all_gather_perf' not found on PATH" in result.output
