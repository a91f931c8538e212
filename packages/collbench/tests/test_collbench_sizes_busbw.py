"""Size parsing and sweeps, bus-bandwidth factors, and the config validation of bad input."""

import pytest
from collbench import CollbenchError, algbw_gbps, bus_factor, busbw_gbps, parse_size, size_sweep
from collbench.sizes import align_size, format_size
from zaya_config import ZayaConfigError, compose


@pytest.mark.parametrize(
    ("text", "value"), [("8", 8), ("1K", 1024), ("128M", 128 << 20), ("8G", 8 << 30), ("2kb", 2048), (4096, 4096)]
)
def test_parse_size(text, value):
    assert parse_size(text) == value


def test_parse_size_rejects_garbage():
    with pytest.raises(CollbenchError, match="cannot read size '12Q'"):
        parse_size("12Q")


def test_sweep_by_factor_and_by_step():
    assert size_sweep("1K", "16K", 2) == [1024, 2048, 4096, 8192, 16384]
    assert size_sweep(8, 40, step_bytes=16) == [8, 24, 40]
    assert [format_size(s) for s in size_sweep("1M", "4M", 4)] == ["1M", "4M"]


def test_sizes_out_of_order_and_bad_factor_are_errors():
    with pytest.raises(CollbenchError, match=r"sizes out of order.*swap -b and -e"):
        size_sweep("1M", "1K")
    with pytest.raises(CollbenchError, match=r"step factor 1\.0"):
        size_sweep("1K", "1M", 1.0)


def test_align_size_keeps_whole_elements_per_rank():
    assert align_size(1024, 4, 3) == 1020 and align_size(2, 4, 3) == 12


@pytest.mark.parametrize(
    ("op", "n", "factor"),
    [
        ("all_reduce", 8, 1.75),
        ("all_reduce", 2, 1.0),
        ("reduce_scatter", 4, 0.75),
        ("all_gather", 8, 0.875),
        ("all_to_all", 4, 0.75),
        ("broadcast", 8, 1.0),
    ],
)
def test_bus_factors_match_nccl_tests(op, n, factor):
    assert bus_factor(op, n) == pytest.approx(factor)


def test_bandwidth_units_are_1e9_bytes_per_second():
    assert algbw_gbps(1_000_000, 1000.0) == pytest.approx(1.0)
    assert busbw_gbps("all_reduce", 1_000_000, 1000.0, 4) == pytest.approx(1.5)
    with pytest.raises(CollbenchError, match="unknown collective 'allreduce'"):
        bus_factor("allreduce", 4)


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("bench.collectives.min_bytes=1M", "bench.collectives.min_bytes = '1M'.*sizes out of order"),
        ("bench.collectives.rank_counts=[1]", r"rank_counts\[0\] = 1.*needs two ranks"),
        ("bench.collectives.collectives=[sendrecv]", "'sendrecv'.*backend gloo"),
        ("bench.membw.kernels=[scale]", r"bench.membw.kernels\[0\] = 'scale'"),
        ("bench.device=tpu", "bench.device = 'tpu'"),
        ("sizing.latency_batch=3", "sizing.latency_batch = 3"),
    ],
)
def test_bad_configs_fail_at_compose_with_key_and_fix(override, message):
    with pytest.raises(ZayaConfigError, match=message):
        compose("zaya", ["+bench=default", "+sizing=default", override])


def test_nccl_tests_backend_knows_more_collectives():
    cfg = compose(
        "zaya",
        ["+bench=default", "bench.collectives.backend=nccl-tests", "bench.collectives.collectives=[sendrecv,reduce]"],
    )
    assert list(cfg.bench.collectives.collectives) == ["sendrecv", "reduce"]
