"""The nccl-tests / rccl-tests parser on real output samples (tests/fixtures/SOURCES.md)."""

import math

import pytest
from collbench import CollbenchError, bus_factor, parse_nccl_tests, parse_nccl_tests_file
from collbench.cli import app
from collbench.results_io import read_csv
from typer.testing import CliRunner


def test_nccl_tests_two_collectives_in_one_log(fixture_path):
    tests = parse_nccl_tests_file(fixture_path("nccl_tests_h100_alltoall_sendrecv.txt"))
    assert [t.collective for t in tests] == ["all_to_all", "sendrecv"]
    a2a = tests[0]
    assert a2a.tool == "nccl-tests" and a2a.n_ranks == 4 and a2a.hosts == ["cnode4-007", "cnode4-012"]
    assert a2a.devices == ["NVIDIA H100 80GB HBM3"] * 4
    assert len(a2a.results) == 20 and a2a.avg_busbw_gbps == pytest.approx(48.6786) and a2a.out_of_bounds == 0
    first_oop, first_ip = a2a.results[0], a2a.results[1]
    assert (first_oop.size_bytes, first_oop.count, first_oop.dtype) == (33554432, 1048576, "float64")
    assert (first_oop.time_us, first_oop.algbw_gbps, first_oop.busbw_gbps) == (576.5, 58.21, 43.66)
    assert first_oop.wrong == 0 and not first_oop.in_place
    assert first_ip.in_place and first_ip.wrong == -1  # N/A: in-place all-to-all is not checked
    assert tests[1].results[-1].time_us == 723065.0


@pytest.mark.parametrize(
    ("name", "ranks", "rows", "avg", "first_time", "last_busbw"),
    [
        ("rccl_tests_mi300x_8gpu_allreduce.txt", 8, 31, 110.464, 19.28, 315.91),
        ("rccl_tests_mi300x_16gpu_2node_allreduce.txt", 16, 32, 92.3318, 256.5, 357.41),
    ],
)
def test_rccl_tests_variants(fixture_path, name, ranks, rows, avg, first_time, last_busbw):
    (test,) = parse_nccl_tests_file(fixture_path(name))
    assert test.tool == "rccl-tests" and test.collective == "all_reduce" and test.n_ranks == ranks
    assert test.devices == ["AMD Instinct MI300X"] * ranks
    assert len(test.results) == 2 * rows and test.avg_busbw_gbps == pytest.approx(avg)
    assert test.results[0].time_us == first_time and test.results[-1].busbw_gbps == last_busbw
    assert all(r.wrong == 0 and r.backend == "rccl" for r in test.results)


@pytest.mark.parametrize(
    ("name", "min_size"),
    [
        ("rccl_tests_mi300x_8gpu_allreduce.txt", 1 << 20),
        ("rccl_tests_mi300x_16gpu_2node_allreduce.txt", 1 << 20),
        ("nccl_tests_h100_alltoall_sendrecv.txt", 1 << 20),
    ],
)
def test_our_bus_factors_reproduce_the_tools_busbw(fixture_path, name, min_size):
    for test in parse_nccl_tests_file(fixture_path(name)):
        factor = bus_factor(test.collective, test.n_ranks)
        for r in test.results:
            if r.size_bytes >= min_size:  # big enough that the printed two decimals carry the ratio
                exact_algbw = r.size_bytes / r.time_us / 1e3  # GB/s from the printed size and time
                assert r.algbw_gbps == pytest.approx(exact_algbw, rel=1e-3, abs=0.006)
                assert r.busbw_gbps == pytest.approx(exact_algbw * factor, rel=1e-3, abs=0.006)


def test_legacy_headerless_fragment_with_error_column(fixture_path):
    (test,) = parse_nccl_tests_file(
        fixture_path("legacy_nccl_tests_issue340_fragment.txt"), collective="all_gather", n_ranks=2
    )
    assert test.collective == "all_gather" and test.n_ranks == 2 and len(test.results) == 24
    r = test.results[0]
    assert (r.size_bytes, r.count, r.dtype, r.time_us, r.busbw_gbps) == (65536, 8192, "float32", 16.57, 1.98)
    assert r.wrong == -1 and r.max_rel_error == 0.0  # an error magnitude, not a #wrong count
    assert test.results[-1].in_place and test.results[-1].time_us == 3070.3


def test_mpirun_tag_output_and_nccl_info_lines_are_skipped(fixture_path):
    text = fixture_path("rccl_tests_mi300x_8gpu_allreduce.txt").read_text().splitlines()
    noisy = []
    for i, line in enumerate(text):
        noisy.append(f"[1,0]<stdout>:{line}")
        if i % 5 == 0:
            noisy.append("gpu-53:12345:12345 [0] NCCL INFO Channel 00/32 : 0 1 2 3 4 5 6 7")
    (clean,) = parse_nccl_tests_file(fixture_path("rccl_tests_mi300x_8gpu_allreduce.txt"))
    (tagged,) = parse_nccl_tests("\n".join(noisy))
    assert [(r.size_bytes, r.time_us) for r in tagged.results] == [(r.size_bytes, r.time_us) for r in clean.results]
    assert tagged.n_ranks == 8 and tagged.tool == "rccl-tests"


def test_text_without_rows_is_a_clear_error():
    with pytest.raises(CollbenchError, match="no nccl-tests result rows"):
        parse_nccl_tests("# nThread 1 nGpus 1\nNCCL INFO nothing here\n")


def test_cli_parse_prints_and_writes_csv(fixture_path, tmp_path):
    out = tmp_path / "rows.csv"
    result = CliRunner().invoke(
        app, ["parse", str(fixture_path("nccl_tests_h100_alltoall_sendrecv.txt")), "--csv", str(out)]
    )
    assert result.exit_code == 0, result.output
    assert "all_to_all" in result.output and "48.6786" in result.output
    rows = read_csv(out)
    assert len(rows) == 40 and {r.collective for r in rows} == {"all_to_all", "sendrecv"}
    assert math.isnan(rows[0].time_us_min)


def test_cli_parse_missing_file_exits_with_message(tmp_path):
    result = CliRunner().invoke(app, ["parse", str(tmp_path / "nope.log")])
    assert result.exit_code == 2 and "no such file" in result.output
