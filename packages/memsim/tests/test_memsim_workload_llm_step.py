"""LLM step streams: bytes per region, layout, layer order, seeded expert choice, bad shapes."""

import numpy as np
import pytest
from memsim import MemsimError
from memsim.workloads import REGIONS, LlmStepShape, build_step_stream
from memsim.workloads.llm_step import DENSE, EXPERTS, KV, REGION_ALIGN_BYTES, STATE

LINE = 64


def decode_shape(**changes) -> LlmStepShape:
    base = dict(phase="decode", layers=4, batch_size=2, tokens=2, dense_bytes_per_layer=10_000, head_bytes=7_000,
                expert_bytes=3_000, experts_per_layer=8, active_experts_per_layer=1.5, kv_read_bytes_per_sequence=4_096,
                kv_write_bytes_per_sequence=64, kv_capacity_bytes_per_sequence=8_192, state_bytes_per_sequence=200)  # fmt: skip
    return LlmStepShape(**{**base, **changes})


def lines(nbytes: int) -> int:
    return -(-nbytes // LINE)


def test_stream_carries_the_shapes_bytes_per_region_in_whole_lines():
    shape = decode_shape()
    stream = build_step_stream(shape, LINE, seed=3)
    reads, writes = stream.region_bytes(write=False), stream.region_bytes(write=True)
    L, B = shape.layers, shape.batch_size
    assert reads["dense_weights"] == (L * lines(10_000) + lines(7_000)) * LINE
    assert reads["expert_weights"] == 6 * lines(3_000) * LINE  # round(1.5 x 4 layers) experts
    assert reads["kv_cache"] == L * B * 4_096
    assert reads["conv_and_delayed_state"] == writes["conv_and_delayed_state"] == L * B * lines(200) * LINE
    assert writes["kv_cache"] == L * B * LINE and writes["dense_weights"] == writes["expert_weights"] == 0
    assert stream.total_bytes == sum(reads.values()) + sum(writes.values())
    expected = shape.region_read_bytes()
    for name in REGIONS:  # the stream only rounds up to lines
        assert expected[name] <= reads[name] < expected[name] + LINE * 2 * L * B + LINE


def test_layers_come_in_order_and_each_layer_reads_distinct_experts_of_its_own_block():
    shape = decode_shape(active_experts_per_layer=3.0)
    stream = build_step_stream(shape, LINE, seed=0)
    dense_runs = np.flatnonzero(stream.region == DENSE)
    expert_runs = np.flatnonzero(stream.region == EXPERTS)
    align = REGION_ALIGN_BYTES // LINE
    expert_base = -(-(shape.layers * lines(10_000) + lines(7_000)) // align) * align  # after dense + head
    per_expert = lines(3_000)
    for layer in range(shape.layers):
        lo, hi = dense_runs[layer], dense_runs[layer + 1]  # the last dense run is the LM head
        mine = expert_runs[(expert_runs > lo) & (expert_runs < hi)]
        slots = (stream.start_line[mine] - expert_base) // per_expert
        assert len(set(slots.tolist())) == 3
        assert all(layer * 8 <= s < (layer + 1) * 8 for s in slots)
    assert dense_runs[-1] == len(stream.start_line) - 1  # the head is read last


def test_expert_choice_is_seeded():
    a, b, c = (build_step_stream(decode_shape(), LINE, seed=s) for s in (1, 1, 2))
    assert np.array_equal(a.start_line, b.start_line)
    assert not np.array_equal(a.start_line, c.start_line)


def test_kv_layout_appends_the_new_position_after_the_cached_ones():
    shape = decode_shape()
    stream = build_step_stream(shape, LINE, seed=0)
    kv = stream.region == KV
    reads = stream.start_line[kv & ~stream.is_write]
    writes = stream.start_line[kv & stream.is_write]
    cap = 8_192 // LINE
    assert np.array_equal(np.diff(reads), np.full(len(reads) - 1, cap))  # [L][B][capacity]
    assert np.array_equal(writes, reads + 4_096 // LINE)


def test_prefill_writes_state_without_reading_it_and_reads_no_kv():
    shape = decode_shape(phase="prefill", tokens=64, kv_read_bytes_per_sequence=0, kv_write_bytes_per_sequence=2_048,
                         state_read=False)  # fmt: skip
    stream = build_step_stream(shape, LINE, seed=0)
    reads = stream.region_bytes(write=False)
    assert reads["kv_cache"] == 0 and reads["conv_and_delayed_state"] == 0
    assert stream.region_bytes(write=True)["kv_cache"] == 4 * 2 * 2_048
    assert not stream.is_write[stream.region == STATE].tolist().count(False)


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"phase": "train"}, "phase = 'train'"),
        ({"active_experts_per_layer": 9.0}, "active_experts_per_layer = 9.0"),
        ({"kv_read_bytes_per_sequence": 9_000}, "kv_capacity_bytes_per_sequence"),
        ({"layers": 0}, "layers = 0"),
        ({"head_bytes": -1}, "head_bytes = -1"),
    ],
)
def test_bad_shapes_are_refused_with_the_field(changes, message):
    with pytest.raises(MemsimError, match=message.replace("(", r"\(").replace(".", r"\.")):
        decode_shape(**changes)


def test_line_size_must_be_a_power_of_two():
    with pytest.raises(MemsimError, match="line_bytes = 48"):
        build_step_stream(decode_shape(), 48)
