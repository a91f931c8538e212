"""The nccl-tests subprocess runner: the binaries are not installed here, so it must say so clearly."""

import pytest
from collbench import CollbenchError
from collbench.config import CollectivesConfig
from collbench.nccl_tests import binary_name, command_line, find_binary, run_nccl_tests


def test_binary_names_follow_nccl_tests():
    assert binary_name("all_reduce") == "all_reduce_perf" and binary_name("all_to_all") == "alltoall_perf"
    with pytest.raises(CollbenchError, match="no binary for 'allreduce'"):
        binary_name("allreduce")


def test_missing_binary_on_path_is_a_clear_error(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(CollbenchError, match=r"'all_reduce_perf' not found on PATH.*nccl-tests.*binary_dir"):
        run_nccl_tests(CollectivesConfig(backend="nccl-tests", collectives=["all_reduce"]))


def test_missing_binary_in_binary_dir_names_the_folder(tmp_path):
    (tmp_path / "alltoall_perf").write_text("not executable")
    with pytest.raises(CollbenchError, match=f"'alltoall_perf' not found in {tmp_path}"):
        find_binary("all_to_all", str(tmp_path))


def test_command_line_maps_the_sweep_to_the_tool_flags(tmp_path):
    cfg = CollectivesConfig(
        backend="nccl-tests",
        min_bytes="8",
        max_bytes="128M",
        step_factor=2,
        iters=20,
        warmup_iters=5,
        gpus_per_process=8,
    )
    argv = command_line(cfg, "all_reduce", "bfloat16", tmp_path / "all_reduce_perf")
    assert argv == [
        str(tmp_path / "all_reduce_perf"),
        "-b",
        "8",
        "-e",
        str(128 << 20),
        "-g",
        "8",
        "-w",
        "5",
        "-n",
        "20",
        "-c",
        "1",
        "-d",
        "bfloat16",
        "-f",
        "2",
    ]
    cfg.step_bytes = "1M"
    assert command_line(cfg, "all_reduce", "float32", tmp_path / "x")[-2:] == ["-i", str(1 << 20)]


def test_missing_launcher_is_a_clear_error(tmp_path):
    cfg = CollectivesConfig(backend="nccl-tests", mpirun="no-such-mpirun -np 8")
    with pytest.raises(CollbenchError, match="launcher 'no-such-mpirun'"):
        command_line(cfg, "all_reduce", "float32", tmp_path / "all_reduce_perf")
