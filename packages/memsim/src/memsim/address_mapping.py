"""Physical address -> (channel, rank, bankgroup, bank, row, column), from DRAMSim3's mapping strings.

A mapping string names six two-letter fields from the most to the least significant bits, e.g.
`rochrababgco` = row | channel | rank | bank | bankgroup | column. The low log2(request size) bits
are the offset inside one request and are dropped first, as in DRAMSim3.
"""

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from memsim.errors import MemsimError
from memsim.spec import DramSpec

FIELDS = ("ch", "ra", "bg", "ba", "ro", "co")


class DramAddress(NamedTuple):
    channel: int
    rank: int
    bankgroup: int
    bank: int
    row: int
    column: int


@dataclass(frozen=True)
class AddressMapping:
    """Bit positions and widths of each field; `decode` is on the hot path, so it is plain shifts."""

    mapping: str
    shift_bits: int
    widths: dict[str, int]
    positions: dict[str, int]

    @property
    def address_bits(self) -> int:
        return self.shift_bits + sum(self.widths.values())

    def decode(self, addr: int) -> DramAddress:
        """Split a byte address into its DRAM coordinates (bits above the capacity are ignored, as DRAMSim3)."""
        a = addr >> self.shift_bits
        p, w = self.positions, self.widths
        return DramAddress(*((a >> p[f]) & ((1 << w[f]) - 1) for f in FIELDS))

    def decode_array(self, addrs: "np.ndarray") -> dict[str, "np.ndarray"]:
        """`decode` for many addresses at once: field name -> int64 array."""
        a = np.asarray(addrs, dtype=np.int64) >> self.shift_bits
        return {f: (a >> self.positions[f]) & ((1 << self.widths[f]) - 1) for f in FIELDS}

    def encode(self, where: DramAddress) -> int:
        """The lowest byte address that decodes to `where` (inverse of `decode`, used by tests and tools)."""
        a = 0
        for f, value in zip(FIELDS, where, strict=True):
            if not 0 <= value < (1 << self.widths[f]):
                raise MemsimError(f"{f} = {value} is outside 0..{(1 << self.widths[f]) - 1} for mapping {self.mapping}")
            a |= value << self.positions[f]
        return a << self.shift_bits

    def check(self, addr: int) -> None:
        """Reject an address beyond the memory's capacity instead of silently wrapping it."""
        if addr < 0 or addr >> self.address_bits:
            raise MemsimError(
                f"address {addr:#x} is beyond the memory's capacity of {1 << self.address_bits:#x} bytes; "
                "wrap it as DRAMSim3 does (--wrap, wrap=True), or use a config with more channels, ranks or rows"
            )

    def wrap(self, addr: int) -> int:
        """The address modulo the capacity: the DRAM location DRAMSim3 maps it to (it ignores higher bits)."""
        return addr & ((1 << self.address_bits) - 1)

    def wrap_array(self, addrs: "np.ndarray") -> "np.ndarray":
        """`wrap` for an int64 or uint64 array; returns int64."""
        mask = (1 << self.address_bits) - 1
        return (np.asarray(addrs) & np.asarray(mask, dtype=np.asarray(addrs).dtype)).astype(np.int64)


def build_address_mapping(spec: DramSpec) -> AddressMapping:
    """Field widths from the organisation, positions from the mapping string (least significant field last)."""
    mapping = spec.address_mapping
    tokens = [mapping[i : i + 2] for i in range(0, len(mapping), 2)]
    if len(mapping) != 12 or sorted(tokens) != sorted(FIELDS):
        raise MemsimError(
            f"address_mapping {mapping!r} must be 12 letters naming each of {', '.join(FIELDS)} once "
            "(e.g. 'rochrababgco')"
        )
    lg = lambda n: n.bit_length() - 1  # noqa: E731  (all sizes are checked powers of two)
    widths = {
        "ch": lg(spec.channels),
        "ra": lg(spec.ranks),
        "bg": lg(spec.bankgroups),
        "ba": lg(spec.banks_per_group),
        "ro": lg(spec.rows),
        "co": lg(spec.columns) - lg(spec.BL),
    }
    positions: dict[str, int] = {}
    pos = 0
    for token in reversed(tokens):
        positions[token] = pos
        pos += widths[token]
    return AddressMapping(mapping, lg(spec.request_size_bytes), widths, positions)
