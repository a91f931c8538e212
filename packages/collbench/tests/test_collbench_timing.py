"""The duration-based timing policy, GEMM operand rotation and the timing columns of the sweep tables (CPU)."""

import math

import pytest
import torch
from collbench.gemm import (
    GemmShape,
    make_operands,
    operand_sets,
    reference_matmul_tflops,
    run_gemm_sweep,
    square_shapes,
    sustain_matmul,
)
from collbench.membw import graph_calls_for, run_membw_sweep
from collbench.sizing.estimator import load_gemm_table
from collbench.tables import write_rows
from collbench.timing import Timing, TimingPolicy, measure_us

CPU = torch.device("cpu")


class CountingMatmul:
    """A real 32x32 matmul that counts its calls, so the policy's bookkeeping can be checked."""

    def __init__(self) -> None:
        self.a = torch.randn(32, 32, generator=torch.Generator().manual_seed(0))
        self.calls = 0

    def __call__(self) -> torch.Tensor:
        self.calls += 1
        return self.a @ self.a


def test_count_based_policy_runs_exactly_warmup_plus_batches_of_min_calls():
    fn = CountingMatmul()
    timing = measure_us(fn, CPU, TimingPolicy(min_calls=7, batches=4, warmup_calls=3))
    assert fn.calls == 3 + 4 * 7
    assert timing.calls_per_batch == 7 and timing.batches == 4
    assert 0 < timing.min_us <= timing.median_us <= timing.max_us


def test_duration_based_policy_sizes_batches_to_last_at_least_batch_s():
    fn = CountingMatmul()
    policy = TimingPolicy(min_calls=1, batches=3, batch_s=5e-3, warmup_calls=1, warmup_s=2e-3)
    timing = measure_us(fn, CPU, policy)
    # a 32x32 matmul is far below 5 ms, so each batch needs many calls; the probe and warm-up come on top
    assert timing.calls_per_batch > 5 and timing.batches == 3
    assert fn.calls > 1 + 3 * timing.calls_per_batch


def test_calls_per_fn_divides_a_replay_into_calls():
    fn = CountingMatmul()
    whole = measure_us(fn, CPU, TimingPolicy(min_calls=4, batches=1, warmup_calls=0), calls_per_fn=8)
    assert whole.calls_per_batch == 32 and fn.calls == 4


def test_timing_spread_and_policy_presets():
    assert Timing(10.0, 9.0, 12.0, 5, 3).spread == pytest.approx(0.3)
    gpu = TimingPolicy.gpu()
    assert gpu.batches * gpu.batch_s >= 0.05  # >= 50 ms of timed work per point
    assert TimingPolicy.from_iters(0, -1) == TimingPolicy(min_calls=1, batches=1, warmup_calls=0)


def test_operand_rotation_spans_the_requested_bytes_with_distinct_random_sets():
    shape = GemmShape(64, 48, 32)
    set_bytes = shape.bytes_moved(2)
    assert operand_sets(shape, 2, 0) == 1 and operand_sets(shape, 2, set_bytes // 2) == 1
    sets = operand_sets(shape, 2, 10 * set_bytes + 1)
    assert sets == 11 and sets * set_bytes > 10 * set_bytes
    assert operand_sets(GemmShape(1, 1, 1), 2, 1 << 40) == 1024  # capped
    operands = make_operands(shape, torch.bfloat16, CPU, 3, torch.Generator().manual_seed(0))
    assert len(operands) == 3 and all(len(t) == 3 for t in operands)
    a0, a1 = operands[0][0], operands[1][0]
    assert a0.data_ptr() != a1.data_ptr() and not torch.equal(a0, a1)
    assert a0.float().std() > 0.5  # random, not zeros (zeros run faster on tensor cores)


def test_sweep_records_timing_columns_and_reads_back_from_csv(tmp_path):
    policy = TimingPolicy(min_calls=2, batches=3, warmup_calls=1)
    shapes = square_shapes([16, 32])
    results = run_gemm_sweep(shapes, "bfloat16", CPU, 0, 0, units=2, policy=policy, rotate_bytes=1 << 16)
    for r, s in zip(results, shapes, strict=True):
        assert r.batches == 3 and r.calls_per_batch == 2
        assert r.operand_sets == operand_sets(s, 2, 1 << 16) > 1
        assert r.time_us_min <= r.time_us <= r.time_us_max
    write_rows([r.as_row() for r in results], tmp_path / "gemm.csv")
    assert load_gemm_table(tmp_path / "gemm.csv") == results
    # a table written before the timing columns existed still loads, with the columns' defaults
    old = [
        {k: v for k, v in r.as_row().items() if k not in ("time_us_min", "batches", "operand_sets")} for r in results
    ]
    write_rows(old, tmp_path / "old.csv")
    (back,) = load_gemm_table(tmp_path / "old.csv")[:1]
    assert math.isnan(back.time_us_min) and back.batches == 0 and back.operand_sets == 1
    assert back.time_us_max == results[0].time_us_max


def test_reference_matmul_and_clock_warmup_run_on_cpu():
    assert reference_matmul_tflops(32, "bfloat16", CPU, 2, 1, TimingPolicy(min_calls=2, batches=2)) > 0
    warm = sustain_matmul(CPU, 0.0, size=32)
    assert warm["calls"] >= 1 and warm["size"] == 32 and warm["last_tflops"] > 0


def test_membw_with_a_policy_records_its_batches():
    policy = TimingPolicy(min_calls=3, batches=2, warmup_calls=1)
    rows = run_membw_sweep(["copy", "triad"], [4096], CPU, 0, 0, policy=policy)
    assert [(r.kernel, r.batches, r.calls_per_batch, r.graph_calls) for r in rows] == [
        ("copy", 2, 3, 0),
        ("triad", 2, 3, 0),
    ]
    assert graph_calls_for(4096) == 512 and graph_calls_for(128 << 20) == 8


@pytest.mark.gpu
def test_duration_policy_on_gpu_graphs_rotation_and_clock_state():
    dev = torch.device("cuda")
    policy = TimingPolicy(min_calls=1, batches=2, batch_s=2e-3, warmup_calls=1, warmup_s=1e-3)
    warm = sustain_matmul(dev, 0.1, size=1024)
    assert warm["calls"] > 1
    rows = run_membw_sweep(["copy"], [1 << 16, 1 << 20], dev, 0, 0, graph_below_bytes=1 << 18, policy=policy)
    assert [r.graph_calls for r in rows] == [graph_calls_for(1 << 16), 0] and all(r.bw_gbps > 0 for r in rows)
    (r,) = run_gemm_sweep(square_shapes([512]), "bfloat16", dev, 0, 0, units=132, policy=policy, rotate_bytes=64 << 20)
    assert r.operand_sets > 1 and r.tflops > 1.0 and r.batches == 2
