"""When refreshes become due: all-bank (rank staggered or simultaneous) or per-bank staggered.

Like DRAMSim3, a refresh is queued every interval (tREFI / ranks, tREFI, or tREFIb) from cycle
`interval` on, rotating over ranks (and banks for per-bank refresh); the controller issues it as soon
as the banks allow, precharging open banks first and holding back the queues it involves.
"""

from memsim.commands import Cmd
from memsim.spec import DramSpec


class RefreshSchedule:
    """Produces (command, rank, flat bank) refresh requests at their due cycles."""

    def __init__(self, spec: DramSpec) -> None:
        self.spec = spec
        self.policy = spec.refresh_policy
        if self.policy == "RANK_LEVEL_SIMULTANEOUS":
            self.interval = spec.t("tREFI")
        elif self.policy == "BANK_LEVEL_STAGGERED":
            self.interval = spec.t("tREFIb")
        else:
            self.interval = spec.t("tREFI") // spec.ranks
        self.next_due = self.interval
        self._rank = self._bankgroup = self._bank = 0

    def due(self, clk: int) -> list[tuple[int, int, int]]:
        """Refreshes that become due at `clk` (call once per cycle at which the controller ticks)."""
        if clk < self.next_due:
            return []
        self.next_due += self.interval
        spec = self.spec
        if self.policy == "RANK_LEVEL_SIMULTANEOUS":
            # every rank at once (DRAMSim3 queues only the first rank here, which starves the others)
            return [(Cmd.REFRESH, r, r * spec.banks) for r in range(spec.ranks)]
        if self.policy == "RANK_LEVEL_STAGGERED":
            rank = self._rank
            self._rank = (rank + 1) % spec.ranks
            return [(Cmd.REFRESH, rank, rank * spec.banks)]
        rank, bg, bank = self._rank, self._bankgroup, self._bank
        self._bankgroup = (bg + 1) % spec.bankgroups
        if self._bankgroup == 0:
            self._bank = (bank + 1) % spec.banks_per_group
            if self._bank == 0:
                self._rank = (rank + 1) % spec.ranks
        return [(Cmd.REFRESH_BANK, rank, (rank * spec.bankgroups + bg) * spec.banks_per_group + bank)]
