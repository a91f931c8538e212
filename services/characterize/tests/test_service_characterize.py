"""services/characterize end to end on CPU: a real subprocess, one run (the README's first command, as written)
and one two-job multirun."""

import csv
import json

import pytest
from readme_blocks import TINY_CHARACTERIZE, checkout_workdir, run_script_ok, sized_command

# The README's laptop run, no override (two spaces: then its comment), with the tiny sizes
# tests/test_readme_commands.py appends (it leaves this command to this file).
LAPTOP = sized_command("services/characterize/README.md", "python3 services/characterize/main.py  ")
TINY = ["bench.collectives.collectives=[all_reduce,all_gather]", *TINY_CHARACTERIZE.split()]


@pytest.mark.slow
@pytest.mark.distributed
def test_characterize_writes_results_plots_and_measured_preset(tmp_path):
    work = checkout_workdir(tmp_path)
    run_script_ok(LAPTOP, work, timeout=400)
    (run_dir,) = (work / "outputs" / "characterize").glob("*/*")
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["measured"]["bf16_matmul_flops"] > 0 and summary["measured"]["allreduce_busbw_gbps"] > 0
    with (run_dir / "collectives.csv").open() as fh:
        rows = list(csv.DictReader(fh))
    every = {"all_reduce", "all_gather", "reduce_scatter", "broadcast", "all_to_all"}  # bench/default.yaml's
    assert {r["collective"] for r in rows} == every and all(r["wrong"] == "0" for r in rows)
    for name in (
        "collectives.zarr/zarr.json",
        "gemm.csv",
        "membw.csv",
        "plots/busbw_all_reduce.png",
        "plots/gemm.png",
        "plots/membw.png",
        "plots/roofline.png",
        "hardware/cpu-measured.yaml",
    ):
        assert (run_dir / name).exists(), name
    assert summary["override"][1] == "hardware=cpu-measured"


@pytest.mark.slow
@pytest.mark.distributed
def test_characterize_multirun_merges_the_jobs(run_service, tmp_path):
    run_service(
        "characterize",
        "-m",
        "bench.collectives.dtypes=[float32],[bfloat16]",
        "bench.gemm.enabled=false",
        "bench.membw.enabled=false",
        *TINY,
    )
    (sweep,) = (tmp_path / "outputs" / "characterize" / "multirun").glob("*/*")
    with (sweep / "merged" / "collectives.csv").open() as fh:
        rows = list(csv.DictReader(fh))
    assert {r["job"] for r in rows} == {"0", "1"}
    assert {r["dtype"] for r in rows} == {"float32", "bfloat16"}
    assert (sweep / "merged" / "plots" / "busbw_all_reduce.png").exists()


def test_bad_config_fails_at_start_with_the_key(run_service):
    proc = run_service("characterize", "bench.collectives.min_bytes=1M", expect_ok=False, timeout=120)
    assert proc.returncode != 0
    assert "bench.collectives.min_bytes = '1M'" in proc.stderr and "sizes out of order" in proc.stderr
