"""One probe per timing constraint: the following command is refused one cycle early, accepted on time.

For every row of each standard's table, the source and target banks are put in the states the two
commands need, the preceding command issues at T, and the target's readiness is asked at T+latency-1
and T+latency. Rolling windows (tFAW, t32AW) get their own probe.
"""

import pytest
from memsim import load_spec
from memsim.channel_state import OPEN, ChannelState
from memsim.commands import COLUMN_CMDS, N_CMD, RANK_CMDS, Cmd
from memsim.timing_table import build_constraints, build_windows, compile_offsets

T = 20_000
NEEDS_OPEN = COLUMN_CMDS | {Cmd.PRECHARGE}
NEEDS_CLOSED = {Cmd.REFRESH, Cmd.SREF_ENTER, Cmd.PD_ENTER, Cmd.REFRESH_SAME_BANK, Cmd.RFM}
STANDARDS = [
    "ddr4_8gb_x8_3200",
    "lpddr4_8gb_x16_2400",
    "gddr6_8gb_x16",
    "hbm2_8gb_x128",
    "ddr5_16gb_x8_4800",  # with DDR5's same-bank refresh and RFM rules
    "lpddr5_8gb_x16_6400",  # per-bank refresh with tpbR2pbR / tpbr2act
    "hbm3_16gb_pc",  # per-bank refresh with tRREFD
    "ddr4_8gb_x8_3200@dramsim3",  # preset@mode: DRAMSim3's per-bank refresh timing differs from jedec's
]


def _target(spec, scope: str) -> tuple[int, int]:
    """(rank, flat bank) of a target in `scope` of the source (rank 0, bank group 0, bank 0)."""
    if scope == "same_bank" or scope == "same_rank":
        return 0, 0
    if scope == "same_bankgroup":
        return 0, 1
    if scope in ("other_bankgroup", "same_index"):
        return 0, spec.banks_per_group  # bank 0 of bank group 1: the same bank index in another group
    return 1, spec.banks


def _ready(state: ChannelState, cmd: int, rank: int, bank: int, row: int, clk: int) -> bool:
    if cmd in RANK_CMDS:
        return state.rank_ready(cmd, rank, clk) == (cmd, -1)
    if cmd == Cmd.REFRESH_SAME_BANK:
        return state.same_bank_ready(cmd, bank, clk) == (cmd, -1)
    if state.required(cmd, bank, row) != cmd or clk < state.earliest[bank * N_CMD + cmd]:
        return False
    return cmd != Cmd.ACTIVATE or clk >= state.window_ready_at(rank)


def _spec(name: str):
    preset, _, mode = name.partition("@")
    return load_spec(preset, mode=mode or None)


def _cases():
    for name in STANDARDS:
        spec = _spec(name)
        for c in build_constraints(spec):
            no_rank, no_group = spec.ranks < 2, spec.bankgroups < 2
            if (c.scope == "other_rank" and no_rank) or (c.scope in ("other_bankgroup", "same_index") and no_group):
                continue
            yield pytest.param(name, c, id=f"{name}-{c.scope}-{c.preceding.name}-{c.following.name}")


SPECS = {name: _spec(name) for name in STANDARDS}
OFFSETS = {name: compile_offsets(SPECS[name], build_constraints(SPECS[name])) for name in STANDARDS}


@pytest.mark.parametrize(("name", "constraint"), list(_cases()))
def test_constraint_probe(name: str, constraint) -> None:
    spec = SPECS[name]
    state = ChannelState(spec, OFFSETS[name], build_windows(spec))
    pre, fol, row = constraint.preceding, constraint.following, 7
    dst_rank, dst = _target(spec, constraint.scope)
    # bring the banks into the states both commands need, long before T
    if pre == Cmd.SREF_EXIT:
        state.issue(Cmd.SREF_ENTER, 0, -1, 0, 0)
    if pre == Cmd.PD_EXIT:
        state.issue(Cmd.PD_ENTER, 0, -1, 0, 0)
    if pre in NEEDS_OPEN:
        state.issue(Cmd.ACTIVATE, 0, row, 0, 0)
    if fol in NEEDS_OPEN and dst != 0:
        state.issue(Cmd.ACTIVATE, dst, row, dst_rank, 1000)
    if fol == Cmd.SREF_EXIT and pre == Cmd.SREF_ENTER:
        pass  # the preceding command itself puts the rank into self refresh
    state.issue(pre, 0, row, 0, T)
    if pre == fol == Cmd.ACTIVATE and dst == 0:
        state.issue(Cmd.PRECHARGE, 0, row, 0, T + spec.t("tRAS"))  # tRC = tRAS + tRP: the PRE in between
    if fol in NEEDS_OPEN and dst == 0 and state.state[0] != OPEN:
        pytest.skip(f"{pre.name} closes the bank, so {fol.name} cannot follow on it")
    if fol in NEEDS_CLOSED and state.state[0] == OPEN:
        # the rule counts from a column command to a bank that a PRE must close first: close it as early as the
        # table allows (the probe needs that PRE's own rule to end before this one)
        before = state.earliest[fol]
        state.issue(Cmd.PRECHARGE, 0, row, 0, state.earliest[Cmd.PRECHARGE])
        if state.earliest[fol] > before and state.earliest[fol] >= T + constraint.latency:
            pytest.skip(f"the PRE before {fol.name} takes longer than {constraint.rule}")
    if fol == Cmd.REFRESH and any(s == OPEN for s in state.state[: spec.banks]):
        pytest.skip("REF needs every bank of the rank closed")
    lat = constraint.latency
    assert _ready(state, fol, dst_rank, dst, row, T + lat), f"{fol.name} refused at +{constraint.rule}"
    if lat >= 1:
        assert not _ready(state, fol, dst_rank, dst, row, T + lat - 1), f"{fol.name} accepted before {constraint.rule}"


@pytest.mark.parametrize("name", ["ddr4_8gb_x8_3200", "gddr6_8gb_x16"])
def test_activation_window_probe(name: str) -> None:
    spec = SPECS[name]
    windows = build_windows(spec)
    state = ChannelState(spec, OFFSETS[name], windows)
    faw = windows[0]
    gap = max(spec.t("tRRD_S"), spec.t("tRRD_L"))
    banks = [g * spec.banks_per_group for g in range(spec.bankgroups)] + list(range(1, spec.banks_per_group))
    for i in range(faw.count):
        state.issue(Cmd.ACTIVATE, banks[i % len(banks)], 1, 0, T + i * gap)
    fifth = banks[faw.count % len(banks)] if faw.count < len(banks) else spec.banks - 1
    last = T + (faw.count - 1) * gap
    ready_at = max(last + gap, T + faw.window)
    assert _ready(state, Cmd.ACTIVATE, 0, fifth, 1, ready_at)
    if T + faw.window > last + gap:
        assert not _ready(state, Cmd.ACTIVATE, 0, fifth, 1, T + faw.window - 1), "fifth ACT inside tFAW"
