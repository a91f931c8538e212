"""memsim: a cycle-accurate DRAM simulator with functional data, power, a protocol checker and RTL co-simulation.

Notable:
- Standards are data (`DramSpec`, loaded from DRAMSim3 `.ini` files or Hydra presets); timing rules are a
  table of (scope, preceding, following, latency) rows compiled into numpy offset arrays.
- Event-driven: controllers report the next cycle at which anything can happen; idle cycles are skipped.
- DRAMSim3-exact scheduling (FR-FCFS over per-bank queues, write drain, refresh, HBM dual issue), so its
  statistics match DRAMSim3's on the reference traces.
- Functional memory with write-queue forwarding, an independent protocol checker, cocotb co-simulation.
"""

from zaya_config.lazy import lazy_exports

# Names load on first use, so `import memsim.cli` (and `zaya memsim --help`) stays light.
_EXPORTS = {
    "MemsimError": "memsim.errors",
    "MemorySystem": "memsim.memory_system",
    "DramSpec": "memsim.spec",
    "load_spec": "memsim.spec",
    "Trace": "memsim.trace",
    "TraceFrontend": "memsim.trace",
    "parse_trace_text": "memsim.trace",
    "read_trace": "memsim.trace",
    "Transaction": "memsim.transaction",
}
__all__ = lazy_exports(__name__, _EXPORTS)
