"""Low-power states of the ranks: self-refresh (`enable_self_refresh`, `sref_threshold`) and precharge power-down
(`enable_power_down`, `pd_threshold`), as JEDEC defines them (DDR4, JESD79-4 4.17 and 4.27).

A rank is idle while no command for it waits in the command queues and no refresh for it is pending. Once
idle for the threshold, in a cycle in which the controller issues nothing else, it closes the rank's open rows
(PRE) and enters the state: SRE (self-refresh: the device refreshes itself, so no REF is queued for it) or
PDE (precharge power-down: the next due REF wakes it). A command queued for a sleeping rank makes the
scheduler issue its exit first (SRX after tCKESR in the state, PDX after tCKE), and the rank serves commands
again tXS / tXP later; the timing table holds these rules and the checker enforces them. A rank re-enters
whenever it is idle again for the threshold: unlike DRAMSim3, which never re-enters self-refresh once a rank
has had a command (it never clears `rank_q_empty`). With both enabled, power-down comes first (its threshold
is the shorter) and self-refresh follows after `sref_threshold` idle cycles (PDX, then SRE).
"""

from memsim.channel_state import OPEN, PD, SREF, ChannelState
from memsim.command_queue import NEVER_READY, CommandQueues
from memsim.commands import N_CMD, Cmd
from memsim.spec import DramSpec

PRE, SRE, PDE, PDX = Cmd.PRECHARGE, Cmd.SREF_ENTER, Cmd.PD_ENTER, Cmd.PD_EXIT


class RankPowerControl:
    """Decides the low-power entries of one channel's ranks (exits come from the scheduler and refresh)."""

    def __init__(self, spec: DramSpec, state: ChannelState, cmdq: CommandQueues) -> None:
        self.spec, self.state, self.cmdq = spec, state, cmdq
        self.sref = spec.enable_self_refresh
        self.pd = spec.enable_power_down
        self.idle_since: list[int | None] = [0] * spec.ranks

    def in_self_refresh(self) -> list[bool]:
        return [self.state.rank_power_state(r) == SREF for r in range(self.spec.ranks)]

    def _queued(self, rank: int) -> bool:
        cmdq = self.cmdq
        if cmdq.per_bank:
            banks = self.spec.banks
            return any(cmdq.queues[q] for q in range(rank * banks, (rank + 1) * banks))
        return bool(cmdq.queues[rank])

    def update(self, clk: int, refresh_queue: list[tuple[int, int, int]]) -> None:
        """Note which ranks are idle from `clk` on (call at the end of every tick)."""
        waiting = {rank for _, rank, _ in refresh_queue}
        for r in range(self.spec.ranks):
            idle = r not in waiting and not self._queued(r)
            if not idle:
                self.idle_since[r] = None
            elif self.idle_since[r] is None:
                self.idle_since[r] = clk

    def _deadlines(self, rank: int) -> tuple[int, int]:
        """Cycles from which self-refresh and power-down are wanted for this rank (NEVER_READY: not wanted)."""
        since = self.idle_since[rank]
        if since is None:
            return NEVER_READY, NEVER_READY
        return (since + self.spec.sref_threshold if self.sref else NEVER_READY,
                since + self.spec.pd_threshold if self.pd else NEVER_READY)  # fmt: skip

    def command(self, clk: int) -> tuple[int, int, int] | None:
        """(command, rank, flat bank) to issue now towards a low-power state, or None."""
        st, e = self.state, self.state.earliest
        for r in range(self.spec.ranks):
            sref_at, pd_at = self._deadlines(r)
            ps, base = st.rank_power_state(r), r * st.banks_per_rank
            if ps == SREF or (clk < sref_at and (clk < pd_at or ps == PD)):
                continue
            if ps == PD:  # self-refresh is due: leave power-down first
                if clk >= e[base * N_CMD + PDX]:
                    return PDX, r, base
                continue
            if ps == OPEN:
                for b in range(base, base + st.banks_per_rank):
                    if st.state[b] == OPEN and clk >= e[b * N_CMD + PRE]:
                        return PRE, r, b
                continue
            target = SRE if clk >= sref_at else PDE
            if st.rank_ready(target, r, clk) == (target, -1):
                return target, r, base
        return None

    def next_event(self) -> int:
        """Lower bound on the cycle a low-power step could issue, if nothing else changes."""
        st, e = self.state, self.state.earliest
        best = NEVER_READY
        for r in range(self.spec.ranks):
            sref_at, pd_at = self._deadlines(r)
            ps, base = st.rank_power_state(r), r * st.banks_per_rank
            if ps == SREF or min(sref_at, pd_at) >= NEVER_READY:
                continue
            if ps == PD:
                at = max(sref_at, e[base * N_CMD + PDX])
            elif ps == OPEN:
                pre = min(e[b * N_CMD + PRE] for b in range(base, base + st.banks_per_rank) if st.state[b] == OPEN)
                at = max(min(sref_at, pd_at), pre)
            else:
                at = min(max(sref_at, st.rank_ready_at(SRE, r)), max(pd_at, st.rank_ready_at(PDE, r)))
            best = min(best, at)
        return best
