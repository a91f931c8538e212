"""When refreshes become due: all-bank (rank staggered or simultaneous) or per-bank staggered.

Like DRAMSim3, a refresh is queued every interval (tREFI / ranks, tREFI, or tREFIb) from cycle
`interval` on, rotating over ranks (and banks for per-bank refresh); the controller issues it as soon
as the banks allow, precharging open banks first and holding back the queues it involves. The k-th
refresh queued is a pure function of k (`entry`), so the compiled engine keeps a queue as two counters.
A rank in self-refresh is skipped (it refreshes itself), as in DRAMSim3.
"""

from memsim.commands import Cmd
from memsim.errors import MemsimError
from memsim.spec import DramSpec


class RefreshSchedule:
    """Produces (command, rank, flat bank) refresh requests at their due cycles."""

    def __init__(self, spec: DramSpec) -> None:
        self.spec = spec
        self.policy = spec.refresh_policy
        # DRAMSim3 queues a simultaneous refresh for the first rank only (the others are never refreshed);
        # jedec mode refreshes every rank
        self.all_ranks = self.policy == "RANK_LEVEL_SIMULTANEOUS" and spec.mode == "jedec"
        if self.policy == "RANK_LEVEL_SIMULTANEOUS":
            self.interval = spec.t("tREFI")
        elif self.policy == "BANK_LEVEL_STAGGERED":
            self.interval = spec.t("tREFIb")
        else:
            self.interval = spec.t("tREFI") // spec.ranks
        if self.interval < 1:
            raise MemsimError(f"config {spec.name}: refresh interval {self.interval} cycles; give tREFI (tREFIb) of at least "
                              "one cycle per rank")  # fmt: skip
        self.next_due = self.interval
        self.pushed = 0  # refreshes queued (or skipped for a rank in self-refresh) so far

    def entry(self, k: int) -> tuple[int, int, int]:
        """The k-th refresh of the rotation as (command, rank, flat bank)."""
        spec = self.spec
        if self.policy == "BANK_LEVEL_STAGGERED":
            bg, rest = k % spec.bankgroups, k // spec.bankgroups
            bank, rank = rest % spec.banks_per_group, rest // spec.banks_per_group % spec.ranks
            return Cmd.REFRESH_BANK, rank, (rank * spec.bankgroups + bg) * spec.banks_per_group + bank
        rank = 0 if self.policy == "RANK_LEVEL_SIMULTANEOUS" and not self.all_ranks else k % spec.ranks
        return Cmd.REFRESH, rank, rank * spec.banks

    def due(self, clk: int, in_self_refresh: list[bool] | None = None) -> list[tuple[int, int, int]]:
        """Refreshes that become due at `clk` (call once per cycle at which the controller ticks)."""
        if clk < self.next_due:
            return []
        self.next_due += self.interval
        count = self.spec.ranks if self.all_ranks else 1
        out = []
        for _ in range(count):
            cmd, rank, bank = self.entry(self.pushed)
            self.pushed += 1
            if in_self_refresh is None or not in_self_refresh[rank]:
                out.append((cmd, rank, bank))
        return out
