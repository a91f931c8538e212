"""cocotb tests of `hdl/dma_copy.v` served by memsim (run by tests/test_memsim_cosim.py through the runner).

Environment: MEMSIM_CONFIG (preset or .ini), MEMSIM_LINES (lines to copy).
"""

import os
import random

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles, RisingEdge

from memsim.cosim.valid_ready import ValidReadyMemory
from memsim.memory_system import MemorySystem

SRC, DST = 0x10000, 0x800000


async def _reset(dut) -> None:
    dut.rst.value = 1
    dut.start.value = 0
    dut.req_ready.value = 0
    dut.resp_valid.value = 0
    await ClockCycles(dut.clk, 3)
    dut.rst.value = 0
    await ClockCycles(dut.clk, 1)


@cocotb.test()
async def dma_copies_real_data_with_memsim_latency(dut) -> None:
    config, lines = os.environ.get("MEMSIM_CONFIG", "ddr4_8gb_x8_3200"), int(os.environ.get("MEMSIM_LINES", "16"))
    system = MemorySystem(config)
    line = system.line_bytes
    rng = random.Random(7)
    payload = [bytes(rng.randrange(256) for _ in range(line)) for _ in range(lines)]
    for i, data in enumerate(payload):
        system.store.write(SRC + i * line, data)  # preload the source through the functional store
    cocotb.start_soon(Clock(dut.clk, 1, unit="ns").start())
    await _reset(dut)
    port = ValidReadyMemory(dut, system)
    cocotb.start_soon(port.serve(20_000))
    dut.src.value, dut.dst.value, dut.lines.value = SRC, DST, lines
    dut.start.value = 1
    await RisingEdge(dut.clk)
    dut.start.value = 0
    for _ in range(20_000):
        await RisingEdge(dut.clk)
        if int(dut.done.value):
            break
    else:
        raise AssertionError("DMA did not finish")
    # real data: the destination holds the source, written by the RTL through memsim
    system.flush()
    for i, data in enumerate(payload):
        assert system.store.read(DST + i * line) == data, f"line {i} differs"
    reads = [t for t in port.accepted if not t.is_write]
    writes = [t for t in port.accepted if t.is_write]
    assert len(reads) == len(writes) == lines
    # cycle-accurate latency: each response reached the DUT no earlier than memsim completed it, and the
    # first read (closed bank, idle memory) took exactly memsim's unloaded latency
    spec = system.spec
    closed = 1 + spec.t("read_delay") + (spec.t("tRCDRD") if spec.family in ("GDDR", "HBM") else spec.t("tRCD"))
    assert reads[0].latency == closed
    for t in port.accepted:
        assert port.response_cycles[id(t)] >= t.complete_cycle
    dut._log.info("copied %d lines in %d cycles; first read latency %d", lines, port.cycle, reads[0].latency)
