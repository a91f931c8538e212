"""Sampling a step stream: whole stream when small, stratified contiguous windows, faithful shares."""

import numpy as np
import pytest
from memsim import MemsimError
from memsim.workloads import LlmStepShape, build_step_stream, sample_stream
from memsim.workloads.llm_step import REGIONS

LINE = 32


@pytest.fixture
def stream():
    shape = LlmStepShape(phase="decode", layers=8, batch_size=4, tokens=4, dense_bytes_per_layer=65_536,
                         head_bytes=131_072, expert_bytes=32_768, experts_per_layer=16, active_experts_per_layer=2.0,
                         kv_read_bytes_per_sequence=16_384, kv_write_bytes_per_sequence=512,
                         kv_capacity_bytes_per_sequence=32_768, state_bytes_per_sequence=1_024)  # fmt: skip
    return build_step_stream(shape, LINE, seed=0)


def all_lines(stream) -> np.ndarray:
    return np.concatenate([np.arange(s, s + n) for s, n in zip(stream.start_line, stream.n_lines, strict=True)])


def test_a_small_stream_is_taken_whole(stream):
    sample = sample_stream(stream, stream.total_bytes * 2, 4096)
    assert sample.scale == 1.0 and sample.windows == 1
    assert np.array_equal(sample.addrs, all_lines(stream) * LINE)


def test_windows_are_contiguous_pieces_of_the_stream_one_per_stride(stream):
    sample = sample_stream(stream, 64 * 1024, 4096, seed=5)
    window = 4096 // LINE
    assert sample.windows == 16 and len(sample) == 16 * window
    assert sample.scale == pytest.approx(stream.total_lines / len(sample))
    full = all_lines(stream) * LINE
    pieces = np.lib.stride_tricks.sliding_window_view(full, window)
    stride = stream.total_lines // 16
    for k, got in enumerate(sample.addrs.reshape(16, window)):
        starts = np.flatnonzero((pieces == got).all(axis=1))  # where in the stream this window is
        assert len(starts) and any(k * stride <= p <= (k + 1) * stride - window for p in starts), k


def test_region_shares_of_the_sample_follow_the_stream(stream):
    sample = sample_stream(stream, 256 * 1024, 2048, seed=1)
    share = sample.region_share()
    total = stream.total_bytes
    for name in REGIONS:
        true = (stream.region_bytes(False)[name] + stream.region_bytes(True)[name]) / total
        assert share[name] == pytest.approx(true, abs=0.06), name


def test_sampling_is_seeded(stream):
    a, b, c = (sample_stream(stream, 64 * 1024, 4096, seed=s) for s in (7, 7, 8))
    assert np.array_equal(a.addrs, b.addrs) and not np.array_equal(a.addrs, c.addrs)


def test_window_larger_than_the_sample_is_refused(stream):
    with pytest.raises(MemsimError, match="window_bytes = 8192 and sample_bytes = 4096"):
        sample_stream(stream, 4096, 8192)
