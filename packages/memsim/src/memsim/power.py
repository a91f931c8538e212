"""IDD-based energy per command class and per cycle of background, in DRAMSim3's terms.

Energy increments are voltage x current x time in cycles, times the devices of a rank; with currents in
mA and cycles converted to ns they are pJ (DRAMSim3 keeps them per cycle, so multiply by tCK for pJ).
ACT counts IDD0 over tRC minus the standby it replaces; RD/WR the IDD4 excess over active standby for a
burst; REF the IDD5 excess over tRFC; background is IDD3N (a bank open) or IDD2N (all banks closed).
"""

from dataclasses import dataclass

from memsim.spec import DramSpec


@dataclass(frozen=True)
class EnergyModel:
    act: float
    read: float
    write: float
    ref: float
    refb: float  # also a DDR5 same-bank refresh (IDD5PB over tRFCb)
    rfm: float  # DDR5 all-bank RFM: IDD5AB over tRFM
    act_standby: float  # per cycle, any bank of the rank open
    pre_standby: float  # per cycle, all banks closed
    pre_powerdown: float
    self_refresh: float

    @classmethod
    def from_spec(cls, spec: DramSpec) -> "EnergyModel":
        p, t, devices = spec.power, spec.timing, float(spec.devices_per_rank)
        vdd, idd3n, idd2n = p["VDD"], p["IDD3N"], p["IDD2N"]
        return cls(
            act=vdd * (p["IDD0"] * t["tRC"] - (idd3n * t["tRAS"] + idd2n * t["tRP"])) * devices,
            read=vdd * (p["IDD4R"] - idd3n) * spec.burst_cycle * devices,
            write=vdd * (p["IDD4W"] - idd3n) * spec.burst_cycle * devices,
            ref=vdd * (p["IDD5AB"] - idd3n) * t["tRFC"] * devices,
            refb=vdd * (p["IDD5PB"] - idd3n) * t["tRFCb"] * devices,
            rfm=vdd * (p["IDD5AB"] - idd3n) * t["tRFM"] * devices,
            act_standby=vdd * idd3n * devices,
            pre_standby=vdd * idd2n * devices,
            pre_powerdown=vdd * p["IDD2P"] * devices,
            self_refresh=vdd * p["IDD6x"] * devices,
        )
