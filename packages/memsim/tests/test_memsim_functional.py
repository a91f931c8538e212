"""Functional memory: reads return the last value written before them, against a plain dict model.

The controller reorders requests (FR-FCFS, write buffering, read merging), but data must behave as if
requests were served in arrival order: forwarding from the write buffer, writes waiting for older reads.
"""

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from memsim import MemorySystem, MemsimError
from memsim.presets import preset_sections
from memsim.spec import spec_from_sections


def _variant(name: str, **system: str):
    sections = preset_sections(name)
    return spec_from_sections({**sections, "system": {**sections["system"], **system}}, name=name)


CONFIGS = {
    "ddr4": "ddr4_8gb_x8_3200",
    "hbm2": "hbm2_8gb_x128",
    "lpddr4": "lpddr4_8gb_x16_2400",
    "ddr4-close-page-per-rank": _variant("ddr4_8gb_x8_3200", row_buf_policy="CLOSE_PAGE", queue_structure="PER_RANK"),
}
ops = st.lists(
    st.tuples(st.booleans(), st.integers(0, 11), st.integers(0, 255), st.integers(0, 40)), min_size=1, max_size=60
)


def _line_addr(system: MemorySystem, slot: int) -> int:
    # a few slots share a bank (row hits/conflicts), a few share nothing; all line-aligned
    rows = [0, 1, 1 << 20, (1 << 20) + 3, 1 << 24, 7]
    return rows[slot % len(rows)] * system.line_bytes * (1 + slot // len(rows))


@pytest.mark.parametrize("config", list(CONFIGS.values()), ids=list(CONFIGS))
@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(sequence=ops)
def test_reads_see_last_write_in_arrival_order(config, sequence) -> None:
    system = MemorySystem(config)
    model: dict[int, bytes] = {}
    expected: list[tuple[object, bytes]] = []
    zeros = bytes(system.line_bytes)
    for is_write, slot, value, gap in sequence:
        addr = _line_addr(system, slot)
        while not system.will_accept(addr, is_write):
            system.advance(1)
        if is_write:
            data = bytes([value]) * system.line_bytes
            system.add_transaction(addr, True, data)
            model[addr] = data
        else:
            expected.append((system.add_transaction(addr, False, callback=lambda t: None), model.get(addr, zeros)))
        system.advance(gap)
    system.drain()
    for trans, want in expected:
        assert trans.complete_cycle >= trans.added_cycle > -1
        assert trans.data == want, f"read of {trans.addr:#x} at {trans.added_cycle}"
    for addr, data in model.items():
        assert system.peek(addr) == data
    system.flush()
    assert all(not c.write_buffer for c in system.channels)
    for addr, data in model.items():
        assert system.store.read(addr) == data


def test_write_buffer_forwarding_is_immediate() -> None:
    system = MemorySystem("ddr4_8gb_x8_3200")
    data = bytes(range(64))
    system.add_transaction(0x1000, True, data)
    system.advance(1)
    done: list = []
    read = system.add_transaction(0x1000, False, callback=done.append)
    system.advance(3)
    assert done == [read] and read.data == data and read.latency == 1


def test_callbacks_fire_at_completion_cycle_with_cycle_accurate_latency() -> None:
    system = MemorySystem("ddr4_8gb_x8_3200")
    seen: list[tuple[int, int]] = []
    trans = system.add_transaction(0x40, False, callback=lambda t: seen.append((system.clk, t.latency)))
    system.run_until(500)
    spec = system.spec
    closed_row = 1 + spec.t("tRCD") + spec.t("CL") + spec.burst_cycle  # README: DDR4 closed row 49 cycles
    assert trans.latency == closed_row == 49
    assert seen == [(trans.complete_cycle, 49)]


def test_bad_api_use_is_a_clear_error() -> None:
    system = MemorySystem("ddr4_8gb_x8_3200")
    with pytest.raises(MemsimError, match="beyond the memory's capacity"):
        system.add_transaction(1 << 40, False)
    with pytest.raises(MemsimError, match="aligned"):
        system.add_transaction(0x10, True, b"x" * 64)
    with pytest.raises(MemsimError, match="no data"):
        system.add_transaction(0x40, False, b"x" * 64)
    for i in range(system.spec.trans_queue_size):
        system.add_transaction(0x40 * (i + 1) << 16, False)
    with pytest.raises(MemsimError, match="queue is full"):
        system.add_transaction(0x80, False)
