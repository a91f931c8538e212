"""RTL co-simulation: memsim serving a Verilog design's memory port under cocotb (extra `memsim[cosim]`)."""

from pathlib import Path

HDL_DIR = Path(__file__).parent / "hdl"
