"""The design's clock and the DRAM's clock (tCK) as exact fractions, and the latency conversion between them.

memsim counts memory cycles of tCK; an RTL design runs on its own clock. A port that serves the design
keeps memsim at `memory_cycles(edge)` = floor(edge x design period / tCK) cycles when the design is at
rising edge `edge`, so both clocks advance at their true rates. A request that memsim completes
`latency` memory cycles after it entered is answered `design_cycles(latency)` = ceil(latency x tCK /
design period) design cycles after it was accepted, plus the port's own constant
(`memsim.cosim.axi_port.PORT_CYCLES`). Frequencies are exact fractions (no float drift over long runs).
"""

from dataclasses import dataclass
from fractions import Fraction
from functools import cached_property

from memsim.errors import MemsimError


def _fraction(value: float | int | str | Fraction, what: str) -> Fraction:
    try:
        out = Fraction(str(value)) if isinstance(value, float) else Fraction(value)
    except (ValueError, ZeroDivisionError) as exc:
        raise MemsimError(f"{what} = {value!r} is not a number; give e.g. 1000 or '1000/3'") from exc
    if out <= 0:
        raise MemsimError(f"{what} = {value!r} must be positive")
    return out


@dataclass(frozen=True)
class ClockDomains:
    """Design clock period and memory tCK, both in ns, as fractions."""

    design_period_ns: Fraction
    tck_ns: Fraction

    @classmethod
    def from_mhz(
        cls, tck_ns: float | Fraction, design_mhz: float | int | str | Fraction | None = None
    ) -> "ClockDomains":
        """The design at `design_mhz` (None: the memory's own clock, 1000 / tCK MHz)."""
        tck = _fraction(tck_ns, "tCK (ns)")
        period = tck if design_mhz is None else 1000 / _fraction(design_mhz, "design clock (MHz)")
        return cls(period, tck)

    @classmethod
    def from_ratio(cls, tck_ns: float | Fraction, design_to_memory: Fraction | str) -> "ClockDomains":
        """The design clock at `design_to_memory` times the memory clock (3/2: the design is 1.5x faster)."""
        tck = _fraction(tck_ns, "tCK (ns)")
        return cls(tck / _fraction(design_to_memory, "design:memory clock ratio"), tck)

    @cached_property
    def memory_per_design(self) -> Fraction:
        """Memory cycles per design cycle."""
        return self.design_period_ns / self.tck_ns

    @cached_property
    def _ratio(self) -> tuple[int, int]:
        r = self.memory_per_design
        return r.numerator, r.denominator

    @property
    def design_mhz(self) -> Fraction:
        return 1000 / self.design_period_ns

    def memory_cycles(self, edge: int) -> int:
        """Memory cycles elapsed at design rising edge `edge` (edge 0 = memory cycle 0)."""
        num, den = self._ratio
        return edge * num // den

    def design_cycles(self, memory_cycles: int) -> int:
        """The smallest number of design cycles that lasts at least `memory_cycles` memory cycles."""
        num, den = self._ratio
        return -(-memory_cycles * den // num)
