"""RTL co-simulation: memsim serving a Verilog design's memory (extra `memsim[cosim]`).

- cocotb ports on memsim's Python engine: `axi_port.AxiMemory` (AXI4; `axi_burst` its arithmetic,
  `clock_domains` the design/memory clock conversion) and `valid_ready.ValidReadyMemory`;
- the SimDRAM drop-in: `native/` (memsim's C++ engine, the one that also runs trace-driven runs through
  `memsim.compiled`; an AXI slave; SimDRAM's DPI functions), built by `native_build`, configured by
  `native_config`, reachable from Python through `native_engine` / `native_axi`;
- test benches: `hdl/` (Verilog masters, a DMA, SimDRAM.sv), `axi_testbench` (cocotb tests), `axi_traffic` /
  `axi_runs` (traffic and checks), `testbench_top`, `simdram_harness`; `simulators` finds Icarus and Verilator.
"""

from pathlib import Path

HDL_DIR = Path(__file__).parent / "hdl"
