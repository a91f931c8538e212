"""memsim as RTL: synthesizable Verilog of a memory channel generated from memsim's own standard data.

`generate_rtl(spec, dir)` writes the controller (queues, per-bank state and timing counters from the timing
table, FR-FCFS with DRAMSim3's rules, refresh, write-data slots and a data-store port), a behavioural store
a top and an AXI4 slave in front of the top (`memsim.rtl.axi_verilog`, checked under Verilator by
`memsim.rtl.axi_check`); `memsim.rtl.verify.verify` runs it under Verilator against memsim's Python engine;
`memsim.rtl.synth.synthesize` runs yosys on it. Light at import: the parts load when first used.
"""

from typing import Any

__all__ = ["GeneratedRtl", "generate_rtl"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from memsim.rtl import generate

        return getattr(generate, name)
    raise AttributeError(name)
