"""Skipping idle cycles changes nothing: the event-driven run equals ticking every cycle."""

import pytest
from memsim import MemorySystem, TraceFrontend
from memsim.fuzz import random_trace


@pytest.mark.parametrize("name", ["ddr4_8gb_x8_3200", "gddr6_8gb_x16", "hbm2_8gb_x128", "lpddr4_8gb_x16_2400"])
def test_event_driven_equals_every_cycle(name: str) -> None:
    results = []
    for skip in (True, False):
        system = MemorySystem(name, functional=False)
        for ctrl in system.channels:
            ctrl.skip_idle = skip
        trace = random_trace(system.spec, 800, seed=11, write_fraction=0.35, max_gap=40)
        TraceFrontend(system, trace).run(40_000)
        results.append((system.issued_commands(), system.stats()))
    assert results[0][0] == results[1][0]
    assert results[0][1] == results[1][1]


def test_idle_time_costs_no_ticks() -> None:
    system = MemorySystem("ddr4_8gb_x8_3200", functional=False)
    ticks = 0
    original = system.channels[0].tick

    def counting(clk: int) -> None:
        nonlocal ticks
        ticks += 1
        original(clk)

    system.channels[0].tick = counting
    system.add_transaction(0x40, False)
    system.advance(1_000_000)
    # one read and ~160 refreshes (each a few commands) in a million cycles: far fewer ticks than cycles
    assert ticks < 2_000
    assert system.stats()["0"]["num_reads_done"] == 1
