"""Timing constraints as a table: (scope, preceding command, following command, latency).

In the spirit of Ramulator 2, the rules are data: one row per constraint, derived from the standard's
named parameters, then compiled into arrays the controller checks in O(1). Scopes say which banks a
preceding command constrains: the same bank, other banks of its bank group, banks of other bank groups
of its rank, banks of other ranks, or every bank of its rank (rank-level commands). The latencies are
DRAMSim3's (its `Timing` class), since DRAMSim3 is the accuracy target; `memsim.checker` re-derives the
JEDEC rules independently to audit what the controller issues. Rolling activation windows (tFAW,
t32AW) are `WindowConstraint`s.
"""

from dataclasses import dataclass

import numpy as np

from memsim.commands import N_CMD, Cmd
from memsim.config_keys import PPD_PROTOCOLS
from memsim.spec import DramSpec

SCOPES = ("same_bank", "same_bankgroup", "other_bankgroup", "other_rank", "same_rank", "same_index")
RD, WR, RDA, WRA = Cmd.READ, Cmd.WRITE, Cmd.READ_PRECHARGE, Cmd.WRITE_PRECHARGE
ACT, PRE, REF, REFB, SRE, SRX, PDE, PDX = (Cmd.ACTIVATE, Cmd.PRECHARGE, Cmd.REFRESH, Cmd.REFRESH_BANK,
                                           Cmd.SREF_ENTER, Cmd.SREF_EXIT, Cmd.PD_ENTER, Cmd.PD_EXIT)  # fmt: skip
REFSB, RFM = Cmd.REFRESH_SAME_BANK, Cmd.RFM
NEVER = -(1 << 40)  # "no constraint" offset: clk + NEVER is always in the past


@dataclass(frozen=True)
class TimingConstraint:
    """`following` may not issue to a bank in `scope` of `preceding` until `latency` cycles after it."""

    scope: str
    preceding: Cmd
    following: Cmd
    latency: int
    rule: str  # the parameters it comes from, e.g. "tRCD" or "max(BL/2, tCCD_L)"


@dataclass(frozen=True)
class WindowConstraint:
    """At most `count` of `command` per rank within any `window` cycles (tFAW, GDDR's t32AW)."""

    command: Cmd
    count: int
    window: int
    rule: str


def build_constraints(spec: DramSpec) -> list[TimingConstraint]:
    """The constraint table of one standard, one row per (scope, preceding, following)."""
    t = spec.t
    bc = spec.burst_cycle
    single_bg = spec.bankgroups == 1  # no bank groups: the _L values do not apply
    rr_l = (max(bc, t("tCCD_S")), "max(BL/2, tCCD_S)") if single_bg else (max(bc, t("tCCD_L")), "max(BL/2, tCCD_L)")
    rr_s = (max(bc, t("tCCD_S")), "max(BL/2, tCCD_S)")
    rr_o = (bc + t("tRTRS"), "BL/2 + tRTRS")
    r2w = (t("RL") + bc - t("WL") + t("tRTRS"), "RL + BL/2 - WL + tRTRS")
    r2w_o = (t("read_delay") + bc + t("tRTRS") - t("write_delay"), "RL + BL/2 - WL + tRTRS (rank switch)")
    r2p = (t("AL") + t("tRTP"), "AL + tRTP")
    rp2a = (t("AL") + bc + t("tRTP") + t("tRP"), "AL + BL/2 + tRTP + tRP")
    w2r_l = (t("write_delay") + t("tWTR_S" if single_bg else "tWTR_L"), "WL + BL/2 + tWTR_L")
    w2r_s = (t("write_delay") + t("tWTR_S"), "WL + BL/2 + tWTR_S")
    w2r_o = (t("write_delay") + bc + t("tRTRS") - t("read_delay"), "WL + BL/2 + tRTRS - RL")
    w2w_l = rr_l if single_bg or not t("tCCD_L_WR") else (max(bc, t("tCCD_L_WR")), "max(BL/2, tCCD_L_WR)")
    w2w_s = rr_s
    w2w_o = (bc, "BL/2")
    w2p = (t("WL") + bc + t("tWR"), "WL + BL/2 + tWR")
    r2a = (r2p[0] + t("tRP"), "AL + tRTP + tRP")
    w2a = (w2p[0] + t("tRP"), "WL + BL/2 + tWR + tRP")
    if spec.family in ("GDDR", "HBM"):
        a2r, a2w = (t("tRCDRD"), "tRCDRD"), (t("tRCDWR"), "tRCDWR")
    else:
        a2r = a2w = (t("tRCD") - t("AL"), "tRCD - AL")
    a2a_l = (t("tRRD_S" if single_bg else "tRRD_L"), "tRRD_L")
    a2a_s = (t("tRRD_S"), "tRRD_S")
    rows: list[tuple[str, Cmd, tuple[Cmd, ...], tuple[int, str]]] = [
        # column commands: same bank, other banks of the group, other groups, other ranks
        ("same_bank", RD, (RD, RDA), rr_l), ("same_bank", RD, (WR, WRA), r2w), ("same_bank", RD, (PRE,), r2p),
        ("same_bankgroup", RD, (RD, RDA), rr_l), ("same_bankgroup", RD, (WR, WRA), r2w),
        ("other_bankgroup", RD, (RD, RDA), rr_s), ("other_bankgroup", RD, (WR, WRA), r2w),
        ("other_rank", RD, (RD, RDA), rr_o), ("other_rank", RD, (WR, WRA), r2w_o),
        ("same_bank", WR, (RD, RDA), w2r_l), ("same_bank", WR, (WR, WRA), w2w_l), ("same_bank", WR, (PRE,), w2p),
        ("same_bankgroup", WR, (RD, RDA), w2r_l), ("same_bankgroup", WR, (WR, WRA), w2w_l),
        ("other_bankgroup", WR, (RD, RDA), w2r_s), ("other_bankgroup", WR, (WR, WRA), w2w_s),
        ("other_rank", WR, (RD, RDA), w2r_o), ("other_rank", WR, (WR, WRA), w2w_o),
        ("same_bank", RDA, (ACT,), rp2a), ("same_bank", RDA, (REF, REFB, SRE), r2a),
        ("same_bankgroup", RDA, (RD, RDA), rr_l), ("same_bankgroup", RDA, (WR, WRA), r2w),
        ("other_bankgroup", RDA, (RD, RDA), rr_s), ("other_bankgroup", RDA, (WR, WRA), r2w),
        ("other_rank", RDA, (RD, RDA), rr_o), ("other_rank", RDA, (WR, WRA), r2w_o),
        ("same_bank", WRA, (ACT, REF, REFB, SRE), w2a),
        ("same_bankgroup", WRA, (RD, RDA), w2r_l), ("same_bankgroup", WRA, (WR, WRA), w2w_l),
        ("other_bankgroup", WRA, (RD, RDA), w2r_s), ("other_bankgroup", WRA, (WR, WRA), w2w_s),
        ("other_rank", WRA, (RD, RDA), w2r_o), ("other_rank", WRA, (WR, WRA), w2w_o),
        # row commands
        ("same_bank", ACT, (ACT,), (t("tRC"), "tRC")), ("same_bank", ACT, (RD, RDA), a2r),
        ("same_bank", ACT, (WR, WRA), a2w), ("same_bank", ACT, (PRE,), (t("tRAS"), "tRAS")),
        ("same_bankgroup", ACT, (ACT,), a2a_l), ("other_bankgroup", ACT, (ACT,), a2a_s),
        ("same_bank", PRE, (ACT, REF, REFB, SRE), (t("tRP"), "tRP")),
        # refresh and self refresh
        ("same_rank", REF, (ACT, REF, SRE, PDE), (t("tRFC"), "tRFC")),
        ("same_rank", SRE, (SRX,), (t("tCKESR"), "tCKESR")),
        ("same_rank", SRX, (ACT, REF, REFB, SRE, PDE), (t("tXS"), "tXS")),
        # precharge power-down (JEDEC DDR4 4.17): entry after the last command's data and recovery, at least tCKE
        # in it, tXP from exit to any command; entered only with every bank closed (so after a WR the PRE's
        # write recovery already covers tWRPDEN)
        ("same_bank", PRE, (PDE,), (1, "tPRPDEN")),
        ("same_bank", RD, (PDE,), (t("RL") + bc + 1, "tRDPDEN = RL + BL/2 + 1")),
        ("same_bank", RDA, (PDE,), (t("RL") + bc + 1, "tRDPDEN = RL + BL/2 + 1")),
        ("same_bank", WRA, (PDE,), (t("WL") + bc + t("tWR") + 1, "tWRAPDEN = WL + BL/2 + tWR + 1")),
        ("same_bank", REFB, (PDE,), (t("tRFCb"), "tRFCb")),
        ("same_rank", PDE, (PDX,), (t("tCKE"), "tCKE")),
        ("same_rank", PDX, (ACT, REF, REFB, SRE, PDE), (t("tXP"), "tXP")),
    ]  # fmt: skip
    if spec.mode == "dramsim3":
        # DRAMSim3 applies REFRESH_BANK's other-bank lists (ACT after tRFC, REFB after tREFI) and nothing to the
        # refreshed bank itself (its same-rank list, tRFCb, is never applied): reproduced, not JEDEC; an ACT
        # holds per-bank refreshes of the other banks for tRC
        for other in ("same_bankgroup", "other_bankgroup"):
            rows += [(other, REFB, (ACT,), (t("tRFC"), "tRFC (DRAMSim3)")),
                     (other, REFB, (REFB,), (t("tREFI"), "tREFI (DRAMSim3)")),
                     (other, ACT, (REFB,), (t("tRC"), "tRC (DRAMSim3)"))]  # fmt: skip
    else:
        # JEDEC per-bank refresh (LPDDR4/5 REFpb, HBM3 REFpb; rules as Ramulator 2's HBM3 and LPDDR5): tRFCb on the
        # refreshed bank; another bank's REFpb after tRREFD (LPDDR5 tpbR2pbR), its ACT after tPBR2ACT (LPDDR5
        # tpbr2act; HBM3: tRREFD); an ACT holds another bank's REFpb for tRRD_S
        pbr2pbr = (t("tRREFD"), "tRREFD") if t("tRREFD") else (t("tRRD_S"), "tRRD_S")
        pbr2act = (t("tPBR2ACT"), "tPBR2ACT") if t("tPBR2ACT") else pbr2pbr
        rows += [("same_bank", REFB, (ACT, REFB), (t("tRFCb"), "tRFCb"))]
        for other in ("same_bankgroup", "other_bankgroup"):
            rows += [(other, REFB, (REFB,), pbr2pbr), (other, REFB, (ACT,), pbr2act), (other, ACT, (REFB,), a2a_s)]
    if spec.protocol == "DDR5" or spec.refresh_policy == "SAME_BANK":
        # DDR5 same-bank refresh (JESD79-5; constraints as Ramulator 2's DDR5): REFsb refreshes one bank index in
        # every bank group; those banks wait tRFCsb (memsim's tRFCb) to activate or refresh again, the rank's
        # all-bank commands too; it needs them closed (tRC after ACT, tRP after PRE)
        r2refsb = ("same_bank", REFSB, (ACT, REFSB), (t("tRFCb"), "tRFCsb (tRFCb)"))
        rows += [r2refsb, ("same_index", *r2refsb[1:]),
                 ("same_rank", REFSB, (REF, RFM, SRE, PDE), (t("tRFCb"), "tRFCsb (tRFCb)")),
                 ("same_bank", ACT, (REFSB,), (t("tRC"), "tRC")), ("same_bank", PRE, (REFSB,), (t("tRP"), "tRP")),
                 ("same_bank", RDA, (REFSB,), r2a), ("same_bank", WRA, (REFSB,), w2a),
                 ("same_rank", REF, (REFSB,), (t("tRFC"), "tRFC")), ("same_rank", SRX, (REFSB,), (t("tXS"), "tXS")),
                 ("same_rank", PDX, (REFSB,), (t("tXP"), "tXP"))]  # fmt: skip
    if spec.protocol == "DDR5" or t("RAAIMT"):
        # DDR5 refresh management, all-bank RFM (as Ramulator 2's DDR5_RFM: the same rules as REFab, for tRFM)
        rows += [("same_rank", RFM, (ACT, REF, RFM, SRE, PDE), (t("tRFM"), "tRFM")),
                 ("same_bank", PRE, (RFM,), (t("tRP"), "tRP")), ("same_bank", RDA, (RFM,), r2a),
                 ("same_bank", WRA, (RFM,), w2a), ("same_rank", REF, (RFM,), (t("tRFC"), "tRFC")),
                 ("same_rank", SRX, (RFM,), (t("tXS"), "tXS")), ("same_rank", PDX, (RFM,), (t("tXP"), "tXP"))]  # fmt: skip
        if spec.protocol == "DDR5" or spec.refresh_policy == "SAME_BANK":
            rows += [("same_rank", RFM, (REFSB,), (t("tRFM"), "tRFM"))]
    if spec.is_gddr or spec.protocol in PPD_PROTOCOLS:
        rows += [("same_bankgroup", PRE, (PRE,), (t("tPPD"), "tPPD")),
                 ("other_bankgroup", PRE, (PRE,), (t("tPPD"), "tPPD"))]  # fmt: skip
    return [TimingConstraint(scope, pre, fol, lat, rule) for scope, pre, fols, (lat, rule) in rows for fol in fols]


def build_windows(spec: DramSpec) -> list[WindowConstraint]:
    """Rolling activation windows per rank."""
    windows = [WindowConstraint(ACT, 4, spec.t("tFAW"), "tFAW")]
    if spec.is_gddr:
        windows.append(WindowConstraint(ACT, 32, spec.t("t32AW"), "t32AW"))
    return windows


def _scope_masks(spec: DramSpec) -> dict[str, np.ndarray]:
    """scope -> boolean (source bank, destination bank) matrix over rank-major flat banks."""
    ranks, groups, banks = np.meshgrid(np.arange(spec.ranks), np.arange(spec.bankgroups),
                                       np.arange(spec.banks_per_group), indexing="ij")  # fmt: skip
    r, g, b = (x.reshape(-1) for x in (ranks, groups, banks))
    same_r = r[:, None] == r[None, :]
    same_g = same_r & (g[:, None] == g[None, :])
    same_b = same_g & (b[:, None] == b[None, :])
    same_index = same_r & ~same_g & (b[:, None] == b[None, :])  # DDR5 REFsb's banks in the other bank groups
    return {"same_bank": same_b, "same_bankgroup": same_g & ~same_b, "other_bankgroup": same_r & ~same_g,
            "other_rank": ~same_r, "same_rank": same_r, "same_index": same_index}  # fmt: skip


def compile_offsets(spec: DramSpec, constraints: list[TimingConstraint]) -> np.ndarray:
    """offsets[cmd, src_bank, dst_bank * N_CMD + following]: latency, or NEVER; flat banks = rank-major.

    Issuing `cmd` to `src_bank` at clk updates the earliest-issue table with
    `np.maximum(table, clk + offsets[cmd, src_bank])`, one vector operation per command.
    """
    masks = _scope_masks(spec)
    n = spec.ranks * spec.bankgroups * spec.banks_per_group
    offsets = np.full((N_CMD, n, n * N_CMD), NEVER, dtype=np.int64)
    for c in constraints:
        view = offsets[c.preceding][:, c.following :: N_CMD]  # [src bank, dst bank] for this following command
        np.maximum(view, np.where(masks[c.scope], c.latency, NEVER), out=view)
    return offsets
