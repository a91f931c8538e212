"""Result files: CSV and zarr round trips, checksum, multirun merge, busbw plots."""

import math

import pytest
from collbench import CollbenchError, parse_nccl_tests_file
from collbench.plots import plot_busbw
from collbench.results_io import CSV_NAME, merge_multirun, read_csv, read_zarr, write_results


@pytest.fixture
def rows(fixture_path):
    return [r for t in parse_nccl_tests_file(fixture_path("nccl_tests_h100_alltoall_sendrecv.txt")) for r in t.results]


def test_csv_and_zarr_round_trip(rows, tmp_path):
    csv_path, zarr_path = write_results(rows, tmp_path)
    for back in (read_csv(csv_path), read_zarr(zarr_path)):
        assert len(back) == len(rows)
        for a, b in zip(rows, back, strict=True):
            assert (a.collective, a.size_bytes, a.in_place, a.wrong, a.host) == (
                b.collective,
                b.size_bytes,
                b.in_place,
                b.wrong,
                b.host,
            )
            assert a.time_us == pytest.approx(b.time_us) and math.isnan(b.time_us_min)
    assert not list(tmp_path.glob(".*tmp"))  # no temporary leftovers


def test_zarr_checksum_catches_a_modified_store(rows, tmp_path):
    import numpy as np
    import zarr

    _csv, zarr_path = write_results(rows, tmp_path)
    group = zarr.open_group(str(zarr_path), mode="r+")
    times = group["time_us"][:]
    group["time_us"][:] = times + np.float64(1.0)
    with pytest.raises(CollbenchError, match="checksum mismatch"):
        read_zarr(zarr_path)


def test_merge_multirun_tags_rows_with_their_job(rows, tmp_path):
    write_results(rows[:10], tmp_path / "0")
    write_results(rows[10:25], tmp_path / "1")
    merged = merge_multirun(tmp_path)
    assert len(merged) == 25 and [r.job for r in merged].count("0") == 10
    assert len(read_csv(tmp_path / "merged" / CSV_NAME)) == 25
    assert len(merge_multirun(tmp_path)) == 25  # re-merging ignores the merged folder itself


def test_merge_without_results_is_a_clear_error(tmp_path):
    with pytest.raises(CollbenchError, match=f"no {CSV_NAME} under"):
        merge_multirun(tmp_path)


def test_busbw_plots_one_png_per_collective(rows, tmp_path):
    paths = plot_busbw(rows, tmp_path, link_peak_gbps=450.0, link_name="NVLink")
    assert sorted(p.name for p in paths) == ["busbw_all_to_all.png", "busbw_sendrecv.png"]
    assert all(p.stat().st_size > 10_000 and p.read_bytes()[:4] == b"\x89PNG" for p in paths)
