"""A parsed trace (`Trace`) and the array its addresses are kept in: what every trace reader returns
(`memsim.trace`, `memsim.trace_formats`) and what the engines read, in a module of its own so that neither
the readers nor the engines import each other for it.
"""

from dataclasses import dataclass

import numpy as np

from memsim.errors import MemsimError


@dataclass(frozen=True)
class Trace:
    """Parsed trace: parallel arrays, plus how its last line ended."""

    addrs: np.ndarray
    is_write: np.ndarray
    cycles: np.ndarray
    ends_with_newline: bool
    source: str = "<trace>"
    eof_quirks: bool = True  # DRAMSim3's end-of-file behaviour (memsim.trace); False: every line once

    def __len__(self) -> int:
        return len(self.addrs)


def address_array(addrs: list[int]) -> np.ndarray:
    """Byte addresses as int64, or uint64 when one needs all 64 bits (wrapped to the capacity before use)."""
    if addrs and max(addrs) >= 1 << 63:
        if max(addrs) >= 1 << 64:
            raise MemsimError(f"address {max(addrs):#x} has more than 64 bits")
        return np.array(addrs, dtype=np.uint64)
    return np.array(addrs, dtype=np.int64)
