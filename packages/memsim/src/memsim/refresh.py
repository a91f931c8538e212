"""When refreshes become due: all-bank (rank staggered or simultaneous), per-bank staggered, or DDR5 same-bank.

Like DRAMSim3, a refresh is queued every interval (tREFI / ranks, tREFI, or tREFIb) from cycle
`interval` on, rotating over ranks (and banks for per-bank refresh; bank indices, then ranks, for same-bank
refresh, whose REFsb refreshes one bank index in every bank group, as Ramulator 2's SameBank manager); the controller issues it as soon
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
        elif self.policy in ("BANK_LEVEL_STAGGERED", "SAME_BANK"):
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
        if self.policy == "SAME_BANK":  # the flat bank of bank group 0 names the bank index
            bank, rank = k % spec.banks_per_group, k // spec.banks_per_group % spec.ranks
            return Cmd.REFRESH_SAME_BANK, rank, rank * spec.banks + bank
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


class RefreshManagement:
    """DDR5 refresh management (RFM), as Ramulator 2's RFMManager in all-bank mode: an activation counter per bank;
    when one reaches RAAIMT an all-bank RFM is queued for its rank (with the refreshes), and issuing it clears the
    rank's counters. JEDEC's RAAMMT (the most a bank may accumulate before it must wait) is not modelled."""

    def __init__(self, spec: DramSpec) -> None:
        self.threshold = spec.t("RAAIMT")
        self.banks_per_rank = spec.banks
        self.counts = [0] * (spec.ranks * spec.banks)
        self.pending = [False] * spec.ranks

    def activated(self, rank: int, bank: int) -> bool:
        """Count an ACT; True when it makes an RFM due for the rank (not already pending)."""
        self.counts[bank] += 1
        if self.counts[bank] >= self.threshold and not self.pending[rank]:
            self.pending[rank] = True
            return True
        return False

    def issued(self, rank: int) -> None:
        base = rank * self.banks_per_rank
        self.counts[base : base + self.banks_per_rank] = [0] * self.banks_per_rank
        self.pending[rank] = False
