"""memsim as RTL: synthesizable Verilog of a memory channel generated from memsim's own standard data.

`generate_rtl(spec, dir)` writes the controller (queues, per-bank state and timing counters from the timing
table, FR-FCFS with DRAMSim3's rules, refresh, write-data slots and a data-store port), a behavioural store
and a top; `memsim.rtl.verify` runs it under Verilator against memsim's Python engine; `memsim.rtl.synth`
runs yosys on it.
"""

from memsim.rtl.generate import GeneratedRtl, generate_rtl

__all__ = ["GeneratedRtl", "generate_rtl"]
