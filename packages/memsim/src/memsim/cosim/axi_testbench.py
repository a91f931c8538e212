"""cocotb tests of AXI masters served by `AxiMemory` (run through cocotb's runner by memsim's tests and benchmark).

`burst_masters_against_memsim` serves every `axi_burst_master` listed in MEMSIM_AXI_RUNS (see
`memsim.cosim.axi_runs`), each from its own memsim, until all are done, and writes each port's record;
the data and protocol checks happen afterwards on the masters' logs (`axi_runs.check`).
`axi_master_against_memsim` drives the bare slave port `s_axi` with cocotbext-axi's `AxiMaster`:
random reads and writes (unaligned, narrow, several IDs, concurrent) checked against a byte-dict model.
`dma_against_memsim` runs `hdl/axi_dma.v` (the traffic of the SimDRAM test bench) on `AxiMemory` and
writes its results (MEMSIM_DMA_RESULT): the benchmark's cocotb paths.
"""

import json
import os
import random
import time
from pathlib import Path

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles, Combine, First, RisingEdge, with_timeout

from memsim.cosim.axi_port import AxiMemory
from memsim.cosim.axi_runs import decode_runs, record_path
from memsim.cosim.axi_traffic import initial_image
from memsim.memory_system import MemorySystem


def preload(system: MemorySystem, base: int, image: bytes) -> None:
    """Write `image` at `base` into memsim's functional store, line by line."""
    line = system.line_bytes
    for offset in range(0, len(image), line):
        system.store.write(base + offset, image[offset : offset + line])


async def _reset(dut) -> None:
    cocotb.start_soon(Clock(dut.clk, 1000, unit="ps", impl="gpi").start())
    dut.rst.value = 1
    await ClockCycles(dut.clk, 3)
    dut.rst.value = 0


@cocotb.test()
async def burst_masters_against_memsim(dut) -> None:
    folder, runs = decode_runs(os.environ["MEMSIM_AXI_RUNS"])
    limit = int(os.environ.get("MEMSIM_AXI_MAX_CYCLES", "2000000"))  # 1 ns per cycle
    await _reset(dut)
    ports = []
    for run in runs:
        system = MemorySystem(run.config)
        preload(system, run.base, initial_image(run.seed, run.base, run.span))
        port = AxiMemory(dut, system, prefix=f"{run.prefix}_axi", clocks=run.clocks(), stall=run.stall / 100,
                         seed=run.seed)  # fmt: skip
        cocotb.start_soon(port.serve())
        ports.append(port)
    started = time.perf_counter()
    pending = dict(zip(runs, ports, strict=True))
    while pending:  # stop serving each master once it is done, so the others run faster
        dones = [RisingEdge(getattr(dut, f"{run.prefix}_done")) for run in pending]
        await with_timeout(First(*dones), limit, "ns")
        for run in [r for r in pending if int(getattr(dut, f"{r.prefix}_done").value)]:
            pending.pop(run).stop()
    elapsed = time.perf_counter() - started
    await ClockCycles(dut.clk, 2)  # the logs' last lines are written on the edge after done
    for run, port in zip(runs, ports, strict=True):
        record = {
            "design_cycles": int(getattr(dut, f"{run.prefix}_cycle").value),
            "wall_s": elapsed,
            "reads": [{"accept_edge": b.accept_edge, "edges": b.response_edges,
                       "latencies": [r.trans.latency for r in b.lines.values()],
                       "add_edges": [r.add_edge for r in b.lines.values()]}
                      for b in port.accepted_reads],
        }  # fmt: skip
        record_path(run, folder).write_text(json.dumps(record))


@cocotb.test()
async def axi_master_against_memsim(dut) -> None:
    from cocotbext.axi import AxiBus, AxiMaster

    seed, rounds = int(os.environ.get("MEMSIM_AXI_SEED", "1")), int(os.environ.get("MEMSIM_AXI_ROUNDS", "30"))
    config = os.environ.get("MEMSIM_CONFIG", "ddr4_8gb_x8_3200")
    await _reset(dut)
    system = MemorySystem(config)
    base, span = 0x20000, 1 << 16
    image = initial_image(seed, base, span)
    preload(system, base, image)
    model = {base + i: b for i, b in enumerate(image)}
    port = AxiMemory(dut, system, prefix="s_axi", stall=0.2, seed=seed)
    cocotb.start_soon(port.serve())
    master = AxiMaster(AxiBus.from_prefix(dut, "s_axi"), dut.clk, dut.rst)
    data_bytes = len(dut.s_axi_wdata) // 8
    rng = random.Random(seed)
    for _ in range(rounds):
        # a round of concurrent operations on disjoint ranges; the model decides every read's data
        starts = sorted(rng.sample(range(base, base + span - 1024, 1024), 6))
        ops = []
        for start in starts:
            addr = start + rng.randrange(512)
            length = rng.randint(1, 512)
            size = rng.randint(0, (data_bytes - 1).bit_length())
            ident = rng.randrange(4)
            if rng.random() < 0.5:
                data = rng.randbytes(length)
                ops.append((addr, data, cocotb.start_soon(master.write(addr, data, awid=ident, size=size))))
            else:
                ops.append((addr, length, cocotb.start_soon(master.read(addr, length, arid=ident, size=size))))
        await Combine(*[task for _, _, task in ops])
        for addr, what, task in ops:
            result = task.result()
            if isinstance(what, bytes):
                assert result.resp == 0
                for i, b in enumerate(what):
                    model[addr + i] = b
            else:
                want = bytes(model.get(addr + i, 0) for i in range(what))
                assert result.data == want, f"read of {what} bytes at {addr:#x} differs from the model"
    dut._log.info("%d rounds; %d read and %d write bursts", rounds, len(port.accepted_reads), len(port.accepted_writes))


@cocotb.test()
async def dma_against_memsim(dut) -> None:
    from memsim.cosim.clock_domains import ClockDomains

    config = os.environ.get("MEMSIM_CONFIG", "ddr4_8gb_x8_3200")
    design_mhz = float(os.environ.get("MEMSIM_DESIGN_MHZ", "1000"))
    system = MemorySystem(config)
    dut.start.value = 0
    dut.src.value, dut.dst.value = 0, 0x0100_0000  # the SimDRAM bench uses these offsets from its MEM_BASE
    dut.bytes.value = int(os.environ.get("MEMSIM_DMA_BYTES", str(64 * 1024)))
    await _reset(dut)
    port = AxiMemory(dut, system, prefix="m_axi", clocks=ClockDomains.from_mhz(system.spec.tCK_ns, design_mhz))
    cocotb.start_soon(port.serve())
    dut.start.value = 1
    started, cpu_started = time.perf_counter(), time.process_time()
    await with_timeout(RisingEdge(dut.done), 100_000_000, "ns")
    elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu_started
    result = {"done": 1, "errors": int(dut.errors.value), "cycles": int(dut.cycle.value), "wall_s": elapsed,
              "cpu_s": cpu, "first_ar": int(dut.first_ar.value), "first_r": int(dut.first_r.value)}  # fmt: skip
    result["cycles_per_s"], result["cycles_per_cpu_s"] = result["cycles"] / elapsed, result["cycles"] / cpu
    Path(os.environ["MEMSIM_DMA_RESULT"]).write_text(json.dumps(result))
    assert result["errors"] == 0, f"the DMA read {result['errors']} bad beats"
