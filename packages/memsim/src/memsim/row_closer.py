"""Aggressive precharging (`aggressive_precharging_enabled`, jedec mode): close a row as soon as no queued
command hits it, so that the next access to another row of that bank does not pay tRP.

DRAMSim3 reads the option but never acts on it, so dramsim3 mode ignores it too. Here the controller, in a
cycle in which it issues nothing else, precharges the lowest-numbered open bank whose PRE is allowed and
whose command queue holds no command for its open row (banks held for a pending refresh are left to it).
"""

from memsim.channel_state import OPEN, ChannelState
from memsim.command_queue import NEVER_READY, CommandQueues
from memsim.commands import N_CMD, Cmd

PRE = Cmd.PRECHARGE


class IdleRowCloser:
    """Finds the open banks that no queued command needs open."""

    def __init__(self, state: ChannelState, cmdq: CommandQueues) -> None:
        self.state = state
        self.cmdq = cmdq

    def _idle_open_banks(self):
        st, cmdq = self.state, self.cmdq
        for bank in range(st.n_banks):
            if st.state[bank] != OPEN:
                continue
            rank = bank // st.banks_per_rank
            q = bank if cmdq.per_bank else rank
            if cmdq.in_refresh and q in cmdq.refresh_queues:
                continue
            row = st.open_row[bank]
            if any(qc.bank == bank and qc.row == row for qc in cmdq.queues[q]):
                continue
            yield rank, bank

    def candidate(self, clk: int) -> tuple[int, int] | None:
        """(rank, bank) of a row to close now, or None."""
        e = self.state.earliest
        for rank, bank in self._idle_open_banks():
            if clk >= e[bank * N_CMD + PRE]:
                return rank, bank
        return None

    def ready_at(self) -> int:
        """First cycle a row could be closed if nothing else changes."""
        e = self.state.earliest
        return min((e[bank * N_CMD + PRE] for _, bank in self._idle_open_banks()), default=NEVER_READY)
