"""An independent protocol checker: replays an issued command stream against the standard's rules.

It shares nothing with the controller but the spec's named parameters (tRCD, tRP, ...): the rules are
re-derived here the way a JEDEC data sheet states them, as minimum distances between commands plus
state rules (an ACT needs a closed bank, a column command an open bank with its row, a REF an idle
rank), a rolling four-activate window, a data bus without overlapping bursts (and a tRTRS gap when the
direction or the rank changes), one command per cycle (HBM: one row and one column command), and a
refresh rate that never falls more than 8 intervals behind (JEDEC's postponement limit; time in self-refresh
owes none), and the low-power states: SRE / PDE only with every bank closed, nothing but the exit while a rank
sleeps, at least tCKESR in self-refresh and tCKE in power-down, and tXS / tXP from the exit to the next command.
"""

from collections import deque
from dataclasses import dataclass

from memsim.commands import SHORT_NAMES, Cmd
from memsim.config_keys import PPD_PROTOCOLS
from memsim.spec import DramSpec

RD, WR, RDA, WRA, ACT, PRE, REF, REFB = (Cmd.READ, Cmd.WRITE, Cmd.READ_PRECHARGE, Cmd.WRITE_PRECHARGE,
                                         Cmd.ACTIVATE, Cmd.PRECHARGE, Cmd.REFRESH, Cmd.REFRESH_BANK)  # fmt: skip
SRE, SRX, PDE, PDX = Cmd.SREF_ENTER, Cmd.SREF_EXIT, Cmd.PD_ENTER, Cmd.PD_EXIT
REFSB, RFM = Cmd.REFRESH_SAME_BANK, Cmd.RFM
READ_KINDS, WRITE_KINDS = (RD, RDA), (WR, WRA)
ROW_KINDS = (ACT, PRE, REF, REFB, SRE, SRX, PDE, PDX, REFSB, RFM)
AWAKE, SELF_REFRESH, POWER_DOWN = "awake", "self-refresh", "power-down"
MAX_POSTPONED_REFRESHES = 8
NEG = -(1 << 40)


@dataclass(frozen=True)
class Violation:
    cycle: int
    channel: int
    command: str
    rank: int
    bank: int
    rule: str
    detail: str

    def __str__(self) -> str:
        return (
            f"cycle {self.cycle} ch{self.channel} {self.command} r{self.rank} b{self.bank}: {self.rule} ({self.detail})"
        )


class _Bank:
    __slots__ = ("last", "open_row")

    def __init__(self) -> None:
        self.open_row = -1
        self.last = {k: NEG for k in (ACT, PRE, RD, WR, RDA, WRA, REF, REFB, REFSB)}


class _Channel:
    def __init__(self, spec: DramSpec) -> None:
        self.banks = [_Bank() for _ in range(spec.ranks * spec.banks)]
        self.acts = [deque(maxlen=4) for _ in range(spec.ranks)]
        self.last_act_bg = [[NEG] * spec.bankgroups for _ in range(spec.ranks)]
        self.last_rd_bg = [[NEG] * spec.bankgroups for _ in range(spec.ranks)]
        self.last_wr_end_bg = [[NEG] * spec.bankgroups for _ in range(spec.ranks)]  # end of write data burst
        self.last_pre = [NEG] * spec.ranks
        self.refs = [0] * spec.ranks
        self.last_ref = [NEG] * spec.ranks
        self.power = [AWAKE] * spec.ranks
        self.power_since = [NEG] * spec.ranks  # cycle of the last SRE / PDE
        self.last_srx = [NEG] * spec.ranks
        self.last_pdx = [NEG] * spec.ranks
        self.sref_time = [0] * spec.ranks  # cycles spent in self-refresh (they owe no refresh)
        self.last_rfm = [NEG] * spec.ranks
        self.last_refsb = [NEG] * spec.ranks  # the rank's last REFsb (all-bank commands wait tRFCsb)
        self.last_refb = [NEG] * spec.ranks  # the rank's last per-bank refresh, and its bank
        self.last_refb_bank = [-1] * spec.ranks
        self.bus_end, self.bus_kind, self.bus_rank = NEG, None, -1
        self.cycle_cmds: tuple[int, int, int] = (NEG, 0, 0)  # (cycle, row cmds, column cmds)


class ProtocolChecker:
    """Feed commands in issue order with `check`; `violations` collects every broken rule."""

    def __init__(self, spec: DramSpec) -> None:
        self.spec = spec
        t = spec.t
        self.bl2 = spec.burst_cycle
        self.rl, self.wl = t("AL") + t("CL"), t("AL") + t("CWL")
        gddr_hbm = spec.family in ("GDDR", "HBM")
        self.trcd_rd = t("tRCDRD") if gddr_hbm else t("tRCD") - t("AL")
        self.trcd_wr = t("tRCDWR") if gddr_hbm else t("tRCD") - t("AL")
        one_bg = spec.bankgroups == 1
        self.tccd_l = t("tCCD_S") if one_bg else t("tCCD_L")
        self.tccd_l_wr = 0 if one_bg else t("tCCD_L_WR")  # DDR5 / LPDDR5 write to write, same group
        self.trrd_l = t("tRRD_S") if one_bg else t("tRRD_L")
        self.twtr_l = t("tWTR_S") if one_bg else t("tWTR_L")
        self.tppd = t("tPPD") if spec.is_gddr or spec.protocol in PPD_PROTOCOLS else 0
        # JEDEC per-bank refresh between banks (the timing table's jedec rows; dramsim3 mode breaks them)
        self.pbr2pbr = t("tRREFD") or t("tRRD_S")
        self.pbr2act = t("tPBR2ACT") or self.pbr2pbr
        self.channels = [_Channel(spec) for _ in range(spec.channels)]
        self.violations: list[Violation] = []
        self.checked = 0

    def _fail(self, cyc: int, ch: int, cmd: int, rank: int, bank: int, rule: str, detail: str) -> None:
        self.violations.append(Violation(cyc, ch, SHORT_NAMES[Cmd(cmd)], rank, bank, rule, detail))

    def _min_gap(self, cyc, ch, cmd, rank, bank, since: int, gap: int, rule: str) -> None:
        if cyc - since < gap:
            self._fail(cyc, ch, cmd, rank, bank, rule, f"{cyc - since} < {gap} cycles")

    def check(self, cyc: int, ch: int, cmd: int, rank: int, bank: int, row: int = -1) -> None:
        """Check one issued command (bank is the flat bank number; for REF any bank of the rank)."""
        self.checked += 1
        spec, t, c = self.spec, self.spec.t, self.channels[ch]
        self._command_bus(cyc, ch, cmd, rank, bank, c)
        if self._low_power(cyc, ch, cmd, rank, bank, c):
            return
        if cmd in (REF, RFM):
            self._refresh(cyc, ch, rank, c, cmd)
            return
        if cmd == REFSB:
            self._same_bank_refresh(cyc, ch, rank, bank, c)
            return
        b = c.banks[bank]
        bg = (bank // spec.banks_per_group) % spec.bankgroups
        gap = lambda since, n, rule: self._min_gap(cyc, ch, cmd, rank, bank, since, n, rule)  # noqa: E731
        if cmd == ACT:
            if b.open_row >= 0:
                self._fail(cyc, ch, cmd, rank, bank, "ACT to an open bank", f"row {b.open_row} is open")
            gap(b.last[ACT], t("tRC"), "tRC")
            gap(b.last[PRE], t("tRP"), "tRP")
            gap(b.last[RDA], t("AL") + t("tRTP") + t("tRP"), "RDA auto-precharge + tRP")
            gap(b.last[WRA], self.wl + self.bl2 + t("tWR") + t("tRP"), "WRA write recovery + tRP")
            gap(c.last_ref[rank], t("tRFC"), "tRFC")
            gap(c.last_rfm[rank], t("tRFM"), "tRFM")
            gap(b.last[REFB], t("tRFCb"), "tRFCb")
            gap(b.last[REFSB], t("tRFCb"), "tRFCsb")
            if c.last_refb_bank[rank] not in (-1, bank):
                gap(c.last_refb[rank], self.pbr2act, "per-bank refresh to ACT of another bank")
            for g in range(spec.bankgroups):
                gap(c.last_act_bg[rank][g], self.trrd_l if g == bg else t("tRRD_S"), "tRRD_L" if g == bg else "tRRD_S")
            acts = c.acts[rank]
            if len(acts) == 4:
                gap(acts[0], t("tFAW"), "tFAW (five ACTs in the window)")
            acts.append(cyc)
            c.last_act_bg[rank][bg] = cyc
            b.open_row, b.last[ACT] = row, cyc
            return
        if cmd in (PRE, REFB):
            if cmd == PRE and b.open_row >= 0:
                gap(b.last[ACT], t("tRAS"), "tRAS")
                gap(max(b.last[RD], b.last[RDA]), t("AL") + t("tRTP"), "tRTP")
                gap(max(b.last[WR], b.last[WRA]), self.wl + self.bl2 + t("tWR"), "tWR")
            if cmd == REFB:
                if b.open_row >= 0:
                    self._fail(cyc, ch, cmd, rank, bank, "REFB to an open bank", f"row {b.open_row} is open")
                gap(b.last[PRE], t("tRP"), "tRP before REFB")
                if c.last_refb_bank[rank] not in (-1, bank):
                    gap(c.last_refb[rank], self.pbr2pbr, "per-bank refresh to per-bank refresh of another bank")
                c.last_refb[rank], c.last_refb_bank[rank] = cyc, bank
            elif self.tppd:
                gap(c.last_pre[rank], self.tppd, "tPPD")
                c.last_pre[rank] = cyc
            b.open_row = -1
            b.last[cmd] = cyc
            return
        # column commands
        if b.open_row < 0 or (row >= 0 and b.open_row != row):
            self._fail(cyc, ch, cmd, rank, bank, "column command to a closed bank or another row",
                       f"open row {b.open_row}, wanted {row}")  # fmt: skip
        is_read = cmd in READ_KINDS
        gap(b.last[ACT], self.trcd_rd if is_read else self.trcd_wr, "tRCD")
        same_kind = c.last_rd_bg[rank] if is_read else [e - self.wl - self.bl2 for e in c.last_wr_end_bg[rank]]
        ccd_l, ccd_l_name = (self.tccd_l_wr, "tCCD_L_WR") if not is_read and self.tccd_l_wr else (self.tccd_l, "tCCD_L")
        for g in range(spec.bankgroups):
            l_or_s = g == bg
            gap(same_kind[g], max(self.bl2, ccd_l if l_or_s else t("tCCD_S")), ccd_l_name if l_or_s else "tCCD_S")
            if is_read:
                gap(c.last_wr_end_bg[rank][g], self.twtr_l if l_or_s else t("tWTR_S"), "tWTR_L" if l_or_s else "tWTR_S")
        self._data_bus(cyc, ch, cmd, rank, bank, c, is_read)
        if is_read:
            c.last_rd_bg[rank][bg] = cyc
        else:
            c.last_wr_end_bg[rank][bg] = cyc + self.wl + self.bl2
        b.last[cmd] = cyc
        if cmd in (RDA, WRA):
            b.open_row = -1

    def _low_power(self, cyc: int, ch: int, cmd: int, rank: int, bank: int, c: _Channel) -> bool:
        """Self-refresh and power-down rules; True when `cmd` was a low-power command (fully checked here)."""
        t, state = self.spec.t, c.power[rank]
        fail = lambda rule, detail: self._fail(cyc, ch, cmd, rank, bank, rule, detail)  # noqa: E731
        if cmd in (SRX, PDX):
            wanted, minimum, name = (
                (SELF_REFRESH, t("tCKESR"), "tCKESR") if cmd == SRX else (POWER_DOWN, t("tCKE"), "tCKE")
            )
            if state != wanted:
                fail(f"exit from {wanted}", f"the rank is {state}")
            elif cyc - c.power_since[rank] < minimum:
                fail(name, f"{cyc - c.power_since[rank]} < {minimum} cycles in {wanted}")
            if cmd == SRX:
                c.sref_time[rank] += cyc - c.power_since[rank]
            c.power[rank] = AWAKE
            (c.last_srx if cmd == SRX else c.last_pdx)[rank] = cyc
            return True
        if state != AWAKE:
            fail(f"command to a rank in {state}", f"it needs {'SRX' if state == SELF_REFRESH else 'PDX'} first")
        self._min_gap(cyc, ch, cmd, rank, bank, c.last_srx[rank], t("tXS"), "tXS")
        self._min_gap(cyc, ch, cmd, rank, bank, c.last_pdx[rank], t("tXP"), "tXP")
        if cmd not in (SRE, PDE):
            return False
        base = rank * self.spec.banks
        for i in range(base, base + self.spec.banks):
            b = c.banks[i]
            gap = lambda since, n, rule, i=i: self._min_gap(cyc, ch, cmd, rank, i, since, n, rule)  # noqa: E731
            if b.open_row >= 0:
                self._fail(cyc, ch, cmd, rank, i, f"{SHORT_NAMES[Cmd(cmd)]} with a bank open", f"row {b.open_row}")
            if cmd == SRE:  # as for a refresh: the precharges done
                gap(b.last[PRE], t("tRP"), "tRP before SRE")
                gap(b.last[RDA], t("AL") + t("tRTP") + t("tRP"), "RDA + tRP before SRE")
                gap(b.last[WRA], self.wl + self.bl2 + t("tWR") + t("tRP"), "WRA before SRE")
            else:  # JEDEC's power-down entry delays after PRE, reads and writes
                gap(b.last[PRE], 1, "tPRPDEN")
                gap(max(b.last[RD], b.last[RDA]), self.rl + self.bl2 + 1, "tRDPDEN")
                gap(max(b.last[WR], b.last[WRA]), self.wl + self.bl2 + t("tWR"), "tWRPDEN")  # covered by a PRE's tWR
        self._min_gap(cyc, ch, cmd, rank, base, c.last_ref[rank], t("tRFC"), "tRFC before low power")
        c.power[rank] = SELF_REFRESH if cmd == SRE else POWER_DOWN
        c.power_since[rank] = cyc
        return True

    def _command_bus(self, cyc: int, ch: int, cmd: int, rank: int, bank: int, c: _Channel) -> None:
        last, rows, cols = c.cycle_cmds
        if last != cyc:
            rows = cols = 0
        is_row = cmd in ROW_KINDS
        rows, cols = rows + is_row, cols + (not is_row)
        c.cycle_cmds = (cyc, rows, cols)
        allowed = (rows <= 1 and cols <= 1) if self.spec.dual_command_issue else rows + cols <= 1
        if not allowed:
            self._fail(cyc, ch, cmd, rank, bank, "command bus", f"{rows} row + {cols} column commands in one cycle")

    def _data_bus(self, cyc: int, ch: int, cmd: int, rank: int, bank: int, c: _Channel, is_read: bool) -> None:
        start = cyc + (self.rl if is_read else self.wl)
        kind = "R" if is_read else "W"
        need = 0
        if c.bus_kind is not None and (c.bus_kind != kind or c.bus_rank != rank):
            need = 0 if (kind == "W" and c.bus_kind == "W") else self.spec.t("tRTRS")
        if start < c.bus_end + need:
            self._fail(cyc, ch, cmd, rank, bank, "data bus", f"burst at {start} overlaps the previous one "
                       f"ending {c.bus_end} (+{need} turnaround)")  # fmt: skip
        c.bus_end, c.bus_kind, c.bus_rank = start + self.bl2, kind, rank

    def _closed_for_refresh(self, cyc: int, ch: int, cmd: int, rank: int, banks, c: _Channel) -> None:
        """A refresh (REF, RFM, REFsb) needs its banks closed: tRP after their PRE, RDA and WRA recovery."""
        t, name = self.spec.t, SHORT_NAMES[Cmd(cmd)]
        for i in banks:
            b = c.banks[i]
            if b.open_row >= 0:
                self._fail(cyc, ch, cmd, rank, i, f"{name} with a bank open", f"row {b.open_row}")
            self._min_gap(cyc, ch, cmd, rank, i, b.last[PRE], t("tRP"), f"tRP before {name}")
            self._min_gap(
                cyc, ch, cmd, rank, i, b.last[RDA], t("AL") + t("tRTP") + t("tRP"), f"RDA + tRP before {name}"
            )
            self._min_gap(
                cyc, ch, cmd, rank, i, b.last[WRA], self.wl + self.bl2 + t("tWR") + t("tRP"), f"WRA before {name}"
            )

    def _refresh(self, cyc: int, ch: int, rank: int, c: _Channel, cmd: int = REF) -> None:
        spec, t = self.spec, self.spec.t
        base = rank * spec.banks
        self._closed_for_refresh(cyc, ch, cmd, rank, range(base, base + spec.banks), c)
        self._min_gap(cyc, ch, cmd, rank, base, c.last_ref[rank], t("tRFC"), "tRFC after a REF")
        self._min_gap(cyc, ch, cmd, rank, base, c.last_rfm[rank], t("tRFM"), "tRFM after an RFM")
        self._min_gap(cyc, ch, cmd, rank, base, c.last_refsb[rank], t("tRFCb"), "tRFCsb after a REFsb")
        if cmd == RFM:
            c.last_rfm[rank] = cyc
            return
        self._refresh_rate(cyc, ch, rank, c)
        c.refs[rank] += 1
        c.last_ref[rank] = cyc

    def _same_bank_refresh(self, cyc: int, ch: int, rank: int, bank: int, c: _Channel) -> None:
        """DDR5 REFsb: bank index `bank` in every bank group, closed, tRC after their ACT."""
        spec, t = self.spec, self.spec.t
        first = rank * spec.banks + bank % spec.banks_per_group
        banks = range(first, first + spec.banks, spec.banks_per_group)
        self._closed_for_refresh(cyc, ch, REFSB, rank, banks, c)
        for i in banks:
            b = c.banks[i]
            self._min_gap(cyc, ch, REFSB, rank, i, b.last[ACT], t("tRC"), "tRC before REFsb")
            self._min_gap(cyc, ch, REFSB, rank, i, b.last[REFSB], t("tRFCb"), "tRFCsb between REFsbs")
            b.last[REFSB] = cyc
        self._min_gap(cyc, ch, REFSB, rank, first, c.last_ref[rank], t("tRFC"), "tRFC after a REF")
        self._min_gap(cyc, ch, REFSB, rank, first, c.last_rfm[rank], t("tRFM"), "tRFM after an RFM")
        c.last_refsb[rank] = cyc

    def _refresh_rate(self, cyc: int, ch: int, rank: int, c: _Channel) -> None:
        asleep = c.sref_time[rank] + (cyc - c.power_since[rank] if c.power[rank] == SELF_REFRESH else 0)
        owed = (cyc - asleep) // self.spec.t("tREFI") - MAX_POSTPONED_REFRESHES - 1
        if self.spec.refresh_policy not in ("BANK_LEVEL_STAGGERED", "SAME_BANK") and c.refs[rank] < owed:
            self._fail(cyc, ch, REF, rank, rank * self.spec.banks, "refresh rate",
                       f"{c.refs[rank]} REFs by cycle {cyc}, at least {owed} due")  # fmt: skip

    def finish(self, end_cycle: int) -> list[Violation]:
        """Final refresh-rate check at the end of the run; returns all violations."""
        for ch, c in enumerate(self.channels):
            for rank in range(self.spec.ranks):
                self._refresh_rate(end_cycle, ch, rank, c)
        return self.violations


def check_commands(spec: DramSpec, commands, end_cycle: int) -> list[Violation]:
    """Replay (cycle, channel, cmd, rank, bank, row, ...) tuples in order; return the violations."""
    checker = ProtocolChecker(spec)
    for cyc, ch, cmd, rank, bank, row, *_ in commands:
        checker.check(cyc, ch, cmd, rank, bank, row)
    return checker.finish(end_cycle)
