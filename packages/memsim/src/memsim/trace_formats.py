"""Trace formats other than DRAMSim3's, and telling them apart.

Ramulator 2 (github CMU-SAFARI/ramulator2, `src/ramulator/frontend/impl/memory_trace/`) has two:
- read/write traces (`ReadWriteTrace`): `R|W ch,ra,bg,ba,ro,co` per line, an address vector of DRAM coordinates
  (one value per level of the standard, the column counted in bursts, as memsim's mapping counts it; a standard
  without bank groups leaves that level out, and HBM's second level is the pseudo-channel);
- load/store traces (`LoadStoreTrace`): `LD|ST ADDR` per line, a byte address in decimal or 0x hex.
Neither has a cycle: Ramulator 2 sends one request per frontend cycle, retrying a refused one, which is a
DRAMSim3 trace with every line at cycle 0 (and without DRAMSim3's end-of-file quirks).
"""

import numpy as np

from memsim.address_mapping import DramAddress, build_address_mapping
from memsim.errors import MemsimError
from memsim.spec import DramSpec
from memsim.trace_data import Trace, address_array


def detect_format(text: str) -> str:
    """ "dramsim3" or "ramulator2", from the first line that is not blank or a comment."""
    for line in text.split("\n", 256)[:256]:  # the first lines are enough (and the text may be large)
        parts = line.split()
        if parts and not parts[0].startswith("#"):
            return "ramulator2" if parts[0] in ("R", "W", "LD", "ST") and len(parts) == 2 else "dramsim3"
    return "dramsim3"


def _coordinates(spec: DramSpec, values: list[int]) -> DramAddress:
    """A Ramulator 2 address vector as memsim coordinates (channel, rank, bank group, bank, row, column)."""
    if len(values) == 5 and spec.bankgroups == 1:
        values = [*values[:2], 0, *values[2:]]
    if len(values) != 6:
        levels = "channel,rank,bankgroup,bank,row,column" + (" (or without bankgroup)" if spec.bankgroups == 1 else "")
        raise ValueError(f"{len(values)} levels; {spec.name} takes {levels}")
    ch, second, bg, ba, ro, co = values
    if spec.pseudo_channels > 1:  # HBM: channel, pseudo-channel, ...; memsim's channels are pseudo-channels
        if not 0 <= second < spec.pseudo_channels:
            raise ValueError(f"pseudo-channel {second} is outside 0..{spec.pseudo_channels - 1}")
        return DramAddress(ch * spec.pseudo_channels + second, 0, bg, ba, ro, co)
    return DramAddress(ch, second, bg, ba, ro, co)


def parse_ramulator2_text(text: str, spec: DramSpec | None = None, source: str = "<trace>") -> Trace:
    """Parse a Ramulator 2 read/write (`R|W vector`) or load/store (`LD|ST addr`) trace; a bad line names itself."""
    mapping = build_address_mapping(spec) if spec is not None else None
    addrs, writes = [], []
    for lineno, line in enumerate(text.splitlines(), start=1):
        parts = line.split()
        if not parts or parts[0].startswith("#"):
            continue
        try:
            if len(parts) != 2 or parts[0] not in ("R", "W", "LD", "ST"):
                raise ValueError("expected 'R|W ch,ra,bg,ba,ro,co' or 'LD|ST ADDR'")
            op, operand = parts
            if op in ("LD", "ST"):
                addr = int(operand, 16) if operand[:2] in ("0x", "0X") else int(operand)
                if addr < 0:
                    raise ValueError("a negative address")
            else:
                if mapping is None:
                    raise MemsimError(f"{source}: a Ramulator 2 read/write trace addresses DRAM coordinates; give the "
                                      "memory system it is for (read_trace(path, spec=...))")  # fmt: skip
                addr = mapping.encode(_coordinates(spec, [int(v) for v in operand.split(",")]))
        except (ValueError, MemsimError) as err:
            if isinstance(err, MemsimError) and "Ramulator 2 read/write trace" in str(err):
                raise
            raise MemsimError(f"{source}:{lineno}: bad Ramulator 2 trace line {line!r}: {err}") from None
        addrs.append(addr)
        writes.append(op in ("W", "ST"))
    n = len(addrs)
    return Trace(address_array(addrs), np.array(writes, dtype=bool), np.zeros(n, dtype=np.int64), False, source,
                 eof_quirks=False)  # fmt: skip
