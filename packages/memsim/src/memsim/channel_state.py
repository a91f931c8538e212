"""State of one channel's banks: open rows, row-hit counts, earliest issue cycle of every command.

`earliest[bank * N_CMD + cmd]` is the first cycle `cmd` may issue to `bank`; issuing a command raises
it with one numpy maximum over the precompiled offsets of the timing table, then the table is mirrored
into a Python list because the scheduler reads single entries far more often than it writes them.
"""

import numpy as np

from memsim.commands import COLUMN_CMDS, N_CMD, RANK_CMDS, Cmd
from memsim.spec import DramSpec
from memsim.timing_table import WindowConstraint

CLOSED, OPEN, SREF, PD = 0, 1, 2, 3
EXIT_OF = {SREF: Cmd.SREF_EXIT, PD: Cmd.PD_EXIT}  # the command a bank in a low-power state needs first
ACT, PRE, REF, REFB = Cmd.ACTIVATE, Cmd.PRECHARGE, Cmd.REFRESH, Cmd.REFRESH_BANK


class ChannelState:
    """Banks of one channel as flat arrays indexed by rank-major bank number."""

    def __init__(self, spec: DramSpec, offsets: np.ndarray, windows: list[WindowConstraint]) -> None:
        self.spec = spec
        self.banks_per_rank = spec.banks
        self.n_banks = spec.ranks * spec.banks
        self._offsets = offsets
        self._earliest = np.zeros(self.n_banks * N_CMD, dtype=np.int64)
        self.earliest: list[int] = self._earliest.tolist()
        self.state = [CLOSED] * self.n_banks
        self.open_row = [-1] * self.n_banks
        self.row_hits = [0] * self.n_banks
        self.windows = [(w.count, w.window) for w in windows]
        # per rank, per window: expiry cycles of recent ACTs (DRAMSim3 drops at most one per ACT)
        self.act_windows: list[list[list[int]]] = [[[] for _ in windows] for _ in range(spec.ranks)]
        self.open_banks_in_rank = [0] * spec.ranks

    def bank_index(self, rank: int, bankgroup: int, bank: int) -> int:
        return (rank * self.spec.bankgroups + bankgroup) * self.spec.banks_per_group + bank

    def required(self, cmd: int, bank: int, row: int) -> int:
        """The command the bank needs next to serve `cmd` (e.g. ACTIVATE for a read to a closed bank)."""
        st = self.state[bank]
        if st == OPEN:
            if cmd in COLUMN_CMDS:
                return cmd if row == self.open_row[bank] else PRE
            return PRE  # REFRESH / REFRESH_BANK / SREF_ENTER need the bank closed
        if st == CLOSED:
            return ACT if cmd in COLUMN_CMDS else cmd
        return EXIT_OF[st] if cmd != EXIT_OF[st] else cmd

    def window_ready_at(self, rank: int) -> int:
        """First cycle the activation windows of `rank` admit another ACT (0 when they already do)."""
        ready = 0
        for (count, _), expiries in zip(self.windows, self.act_windows[rank], strict=True):
            if len(expiries) >= count:
                ready = max(ready, expiries[0])
        return ready

    def rank_ready(self, cmd: int, rank: int, clk: int) -> tuple[int, int] | None:
        """DRAMSim3's rank-level readiness: (PRE, bank) for the first open bank whose PRE may issue,
        (cmd, -1) when every bank is closed and allows `cmd`, else None. A rank in power-down needs its
        PD_EXIT first: (PD_EXIT, -1) once that may issue."""
        base = rank * self.banks_per_rank
        return self._banks_ready(cmd, rank, range(base, base + self.banks_per_rank), clk)

    def rank_ready_at(self, cmd: int, rank: int) -> int:
        """Lower bound on the cycle `rank_ready` can first succeed, given no other command issues."""
        base = rank * self.banks_per_rank
        return self._banks_ready_at(cmd, rank, range(base, base + self.banks_per_rank))

    def same_index_banks(self, bank: int) -> range:
        """The banks a DDR5 REFsb to `bank` refreshes: its bank index in every bank group of its rank."""
        per_group = self.spec.banks_per_group
        first = bank // self.banks_per_rank * self.banks_per_rank + bank % per_group
        return range(first, first + self.banks_per_rank, per_group)

    def same_bank_ready(self, cmd: int, bank: int, clk: int) -> tuple[int, int] | None:
        """`rank_ready` for a REFsb: over the banks of `bank`'s index in every bank group."""
        return self._banks_ready(cmd, bank // self.banks_per_rank, self.same_index_banks(bank), clk)

    def same_bank_ready_at(self, cmd: int, bank: int) -> int:
        """Lower bound on the cycle `same_bank_ready` can first succeed."""
        return self._banks_ready_at(cmd, bank // self.banks_per_rank, self.same_index_banks(bank))

    def _banks_ready(self, cmd: int, rank: int, banks: range, clk: int) -> tuple[int, int] | None:
        e, first = self.earliest, rank * self.banks_per_rank
        low = self.state[first]
        if low >= SREF and cmd != EXIT_OF[low]:
            return (EXIT_OF[low], -1) if clk >= e[first * N_CMD + EXIT_OF[low]] else None
        all_ready = True
        for b in banks:
            if self.state[b] == OPEN:
                if clk >= e[b * N_CMD + PRE]:
                    return PRE, b
                all_ready = False
            elif clk < e[b * N_CMD + cmd]:
                all_ready = False
        return (cmd, -1) if all_ready else None

    def _banks_ready_at(self, cmd: int, rank: int, banks: range) -> int:
        e, first = self.earliest, rank * self.banks_per_rank
        low = self.state[first]
        if low >= SREF and cmd != EXIT_OF[low]:
            return e[first * N_CMD + EXIT_OF[low]]
        open_pre = [e[b * N_CMD + PRE] for b in banks if self.state[b] == OPEN]
        return min(open_pre) if open_pre else max(e[b * N_CMD + cmd] for b in banks)

    def rank_power_state(self, rank: int) -> int:
        """CLOSED / OPEN (some bank open) for an awake rank, or SREF / PD."""
        base = rank * self.banks_per_rank
        if self.state[base] >= SREF:
            return self.state[base]
        return OPEN if self.open_banks_in_rank[rank] else CLOSED

    def issue(self, cmd: int, bank: int, row: int, rank: int, clk: int) -> None:
        """Apply a command's state change and timing consequences (bank = first bank of rank for REF)."""
        if cmd in RANK_CMDS:
            base = rank * self.banks_per_rank
            for b in range(base, base + self.banks_per_rank):
                self._update_bank_state(cmd, b, row)
        else:
            self._update_bank_state(cmd, bank, row)
        if cmd == ACT:
            for (_, window), expiries in zip(self.windows, self.act_windows[rank], strict=True):
                if expiries and clk >= expiries[0]:
                    expiries.pop(0)
                expiries.append(clk + window)
        np.maximum(self._earliest, self._offsets[cmd, bank] + clk, out=self._earliest)
        self.earliest = self._earliest.tolist()

    def _update_bank_state(self, cmd: int, bank: int, row: int) -> None:
        st = self.state[bank]
        rank = bank // self.banks_per_rank
        if st == OPEN:
            if cmd == Cmd.READ or cmd == Cmd.WRITE:
                self.row_hits[bank] += 1
            elif cmd in (Cmd.READ_PRECHARGE, Cmd.WRITE_PRECHARGE, PRE):
                self.state[bank], self.open_row[bank], self.row_hits[bank] = CLOSED, -1, 0
                self.open_banks_in_rank[rank] -= 1
        elif st == CLOSED:
            if cmd == ACT:
                self.state[bank], self.open_row[bank] = OPEN, row
                self.open_banks_in_rank[rank] += 1
            elif cmd == Cmd.SREF_ENTER:
                self.state[bank] = SREF
            elif cmd == Cmd.PD_ENTER:
                self.state[bank] = PD
        elif cmd == EXIT_OF[st]:
            self.state[bank] = CLOSED
