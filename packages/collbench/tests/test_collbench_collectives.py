"""torch.distributed collectives on real gloo process groups (2-4 CPU processes, tiny messages)."""

import time

import pytest
from collbench import CollbenchError, bus_factor
from collbench.collectives import IN_PLACE_MODES, check_backend_collective
from collbench.config import CollectivesConfig
from collbench.launch import FaultDrill, run_collectives, sweep_points
from zaya_config.errors import ZayaConfigError

pytestmark = pytest.mark.distributed

ALL = ["all_reduce", "all_gather", "reduce_scatter", "broadcast", "all_to_all"]


def test_every_collective_on_sub_groups_of_one_launch_is_correct_and_timed():
    cfg = CollectivesConfig(
        collectives=ALL,
        dtypes=["float32", "bfloat16"],
        min_bytes="256",
        max_bytes="1K",
        step_factor=4,
        rank_counts=[2, 3, 4],
        iters=2,
        warmup_iters=1,
        timeout_s=60,
    )
    rows = run_collectives(cfg, progress=False)
    assert len(rows) == len(sweep_points(cfg))
    assert {r.n_ranks for r in rows} == {2, 3, 4}
    # three ranks: sizes rounded down to whole per-rank chunks (1K float32 -> 1020 B)
    assert {r.size_bytes for r in rows if r.n_ranks == 3 and r.dtype == "float32"} == {252, 1020}
    for r in rows:
        assert r.wrong == 0, r  # every element matched the closed-form result
        assert r.in_place in IN_PLACE_MODES[r.collective]
        assert r.time_us_min <= r.time_us <= r.time_us_max
        assert r.busbw_gbps == pytest.approx(r.algbw_gbps * bus_factor(r.collective, r.n_ranks))
        assert r.algbw_gbps == pytest.approx(r.size_bytes / r.time_us / 1e3)
        assert r.tool == "torch" and r.backend == "gloo"
    gather = [r for r in rows if r.collective == "all_gather" and r.n_ranks == 4 and r.dtype == "bfloat16"]
    assert {r.in_place for r in gather} == {False, True}
    assert all(r.count == r.size_bytes // 2 // 4 for r in gather)  # per-rank chunk, as nccl-tests' count


def test_a_rank_that_dies_ends_the_run_with_its_rank_named():
    cfg = CollectivesConfig(
        collectives=["all_reduce"], min_bytes="1K", max_bytes="1K", rank_counts=[2], iters=1, timeout_s=5
    )
    with pytest.raises(CollbenchError, match=r"failed on rank 1 of 2.*exit code 3"):
        run_collectives(cfg, drill=FaultDrill(rank=1, mode="exit"), progress=False)


def test_a_hung_rank_ends_the_run_at_the_timeout_not_a_hang():
    cfg = CollectivesConfig(
        collectives=["all_reduce"], min_bytes="1K", max_bytes="1K", rank_counts=[2], iters=1, timeout_s=3
    )
    start = time.monotonic()
    with pytest.raises(CollbenchError, match=r"(failed on rank 0 of 2|timed out).*"):
        run_collectives(cfg, drill=FaultDrill(rank=1, mode="hang"), progress=False)
    assert time.monotonic() - start < 60


def test_bad_input_fails_before_any_process_starts():
    with pytest.raises(CollbenchError, match="'sendrecv' is not available with backend 'gloo'"):
        check_backend_collective("gloo", "sendrecv")
    # bad fields fail when the config is built, naming the key
    with pytest.raises(ZayaConfigError, match=r"rank_counts\[0\] = 1; allowed: an integer >= 2"):
        CollectivesConfig(rank_counts=[1])
    with pytest.raises(ZayaConfigError, match="sizes out of order"):
        CollectivesConfig(min_bytes="1M", max_bytes="1K")
    with pytest.raises(CollbenchError, match="smaller than the largest rank count"):
        run_collectives(CollectivesConfig(rank_counts=[4]), world_size=2)
    with pytest.raises(CollbenchError, match="no collective supports"):
        run_collectives(CollectivesConfig(collectives=["all_to_all"], in_place=[True]))
