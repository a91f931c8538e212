"""memsim: a cycle-accurate DRAM simulator with functional data, power, a protocol checker and RTL co-simulation.

Notable:
- Standards are data (`DramSpec`, loaded from DRAMSim3 `.ini` files or Hydra presets); timing rules are a
  table of (scope, preceding, following, latency) rows compiled into numpy offset arrays.
- Event-driven: controllers report the next cycle at which anything can happen; idle cycles are skipped.
- DRAMSim3-exact scheduling (FR-FCFS over per-bank queues, write drain, refresh, HBM dual issue), so its
  statistics match DRAMSim3's on the reference traces.
- Functional memory with write-queue forwarding, an independent protocol checker, cocotb co-simulation.
"""

from memsim.errors import MemsimError
from memsim.memory_system import MemorySystem
from memsim.spec import DramSpec, load_spec
from memsim.trace import Trace, TraceFrontend, parse_trace_text, read_trace
from memsim.transaction import Transaction

__all__ = [
    "DramSpec",
    "MemorySystem",
    "MemsimError",
    "Trace",
    "TraceFrontend",
    "Transaction",
    "load_spec",
    "parse_trace_text",
    "read_trace",
]
