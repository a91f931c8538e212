"""Interchangeable scheduling parts, picked by name in the config (`system.scheduler`, `row_buf_policy`).

A scheduler decides which command of one command queue goes next; a row policy decides which column
command a transaction becomes. `frfcfs` is DRAMSim3's rule: the first command in the queue whose
next DRAM command is ready wins (row hits overtake older misses), and a precharge that would close a
row with pending hits waits unless the row has already served 4 hits. `fcfs` serves each queue strictly
in order.
"""

from memsim.channel_state import CLOSED, EXIT_OF, OPEN, ChannelState
from memsim.commands import N_CMD, WRITES, Cmd

ACT, PRE = Cmd.ACTIVATE, Cmd.PRECHARGE
ROW_HIT_CAP = 4


class QueuedCommand:
    """A column command waiting in a command queue, with its decoded coordinates."""

    __slots__ = ("addr", "bank", "bank_in_group", "bankgroup", "cmd", "column", "rank", "row")

    def __init__(self, cmd: int, addr: int, rank: int, bankgroup: int, bank_in_group: int, bank: int, row: int,
                 column: int) -> None:  # fmt: skip
        self.cmd, self.addr, self.rank, self.bankgroup = cmd, addr, rank, bankgroup
        self.bank_in_group, self.bank, self.row, self.column = bank_in_group, bank, row, column


def precharge_allowed(pos: int, queue: list[QueuedCommand], state: ChannelState) -> bool:
    """DRAMSim3's ArbitratePrecharge: no older command to the bank, and no pending hit or hit cap reached."""
    qc = queue[pos]
    bank = qc.bank
    for prev in queue[:pos]:
        if prev.bank == bank:
            return False
    open_row = state.open_row[bank]
    for other in queue[pos:]:
        if other.row == open_row and other.bank == bank:
            return state.row_hits[bank] >= ROW_HIT_CAP
    return True


def write_after_read(pos: int, queue: list[QueuedCommand]) -> bool:
    """An older read to the same location is still queued: the write must wait (WAR ordering)."""
    qc = queue[pos]
    for prev in queue[:pos]:
        if (prev.cmd == Cmd.READ or prev.cmd == Cmd.READ_PRECHARGE) and prev.row == qc.row and \
                prev.column == qc.column and prev.bank == qc.bank:  # fmt: skip
            return True
    return False


def _required(qc: QueuedCommand, state: ChannelState) -> int:
    st = state.state[qc.bank]
    if st == OPEN:
        return qc.cmd if qc.row == state.open_row[qc.bank] else PRE
    return ACT if st == CLOSED else EXIT_OF[st]


class FrFcfsScheduler:
    """First ready, first come first served, within one command queue."""

    name = "frfcfs"

    def __init__(self, state: ChannelState, per_bank: bool = False) -> None:
        self.state = state
        self.ondemand_precharges = 0
        if per_bank and type(self) is FrFcfsScheduler:
            self.first_ready, self.ready_at = self._first_ready_one_bank, self._ready_at_one_bank

    def _candidates(self, queue: list[QueuedCommand]) -> range:
        return range(len(queue))

    # Fast paths for a queue that holds one bank (PER_BANK): the same decisions as the general rule,
    # with the bank's state read once. Closed bank: only the oldest command matters (all need ACT).
    # Open bank: row hits in order; a miss can only precharge from the head (older same-bank commands
    # block it otherwise) and only when no hit is pending or the hit cap is reached.
    def _first_ready_one_bank(self, queue: list[QueuedCommand], clk: int) -> tuple[int, QueuedCommand] | None:
        st = self.state
        head = queue[0]
        bank = head.bank
        base = bank * N_CMD
        e = st.earliest
        bank_state = st.state[bank]
        if bank_state == CLOSED:
            if clk >= e[base + ACT] and clk >= st.window_ready_at(head.rank):
                return ACT, head
            return None
        if bank_state != OPEN:
            return FrFcfsScheduler.first_ready(self, queue, clk)
        open_row = st.open_row[bank]
        if (head.row != open_row and clk >= e[base + PRE]
                and (st.row_hits[bank] >= ROW_HIT_CAP or all(qc.row != open_row for qc in queue))):  # fmt: skip
            self.ondemand_precharges += 1
            return PRE, head
        for pos, qc in enumerate(queue):
            if qc.row == open_row and clk >= e[base + qc.cmd]:
                if qc.cmd in WRITES and write_after_read(pos, queue):
                    continue
                return qc.cmd, qc
        return None

    def _ready_at_one_bank(self, queue: list[QueuedCommand]) -> int | None:
        st = self.state
        head = queue[0]
        bank = head.bank
        base = bank * N_CMD
        e = st.earliest
        bank_state = st.state[bank]
        if bank_state == CLOSED:
            return max(e[base + ACT], st.window_ready_at(head.rank))
        if bank_state != OPEN:
            return FrFcfsScheduler.ready_at(self, queue)
        open_row = st.open_row[bank]
        best = None
        if head.row != open_row and (st.row_hits[bank] >= ROW_HIT_CAP or all(qc.row != open_row for qc in queue)):
            best = e[base + PRE]
        for pos, qc in enumerate(queue):
            if qc.row == open_row:
                if qc.cmd in WRITES and write_after_read(pos, queue):
                    continue
                at = e[base + qc.cmd]
                if best is None or at < best:
                    best = at
        return best

    def first_ready(self, queue: list[QueuedCommand], clk: int) -> tuple[int, QueuedCommand] | None:
        """The (command type, queued command) to issue now from this queue, or None."""
        st = self.state
        e = st.earliest
        for pos in self._candidates(queue):
            qc = queue[pos]
            req = _required(qc, st)
            if clk < e[qc.bank * N_CMD + req]:
                continue
            if req == ACT:
                if clk < st.window_ready_at(qc.rank):
                    continue
            elif req == PRE:
                if not precharge_allowed(pos, queue, st):
                    continue
                self.ondemand_precharges += 1
            elif req in WRITES and write_after_read(pos, queue):
                continue
            return req, qc
        return None

    def ready_at(self, queue: list[QueuedCommand]) -> int | None:
        """Earliest cycle any command of the queue could issue if nothing else changes (None: blocked)."""
        st = self.state
        e = st.earliest
        best = None
        for pos in self._candidates(queue):
            qc = queue[pos]
            req = _required(qc, st)
            at = e[qc.bank * N_CMD + req]
            if req == ACT:
                at = max(at, st.window_ready_at(qc.rank))
            elif req == PRE:
                if not precharge_allowed(pos, queue, st):
                    continue
            elif req in WRITES and write_after_read(pos, queue):
                continue
            if best is None or at < best:
                best = at
        return best


class FcfsScheduler(FrFcfsScheduler):
    """Strict order: only the oldest command of each queue is considered."""

    name = "fcfs"

    def _candidates(self, queue: list[QueuedCommand]) -> range:
        return range(min(1, len(queue)))


SCHEDULERS = {cls.name: cls for cls in (FrFcfsScheduler, FcfsScheduler)}


class OpenPagePolicy:
    """Leave the row open after a column command (RD / WR)."""

    name = "OPEN_PAGE"

    @staticmethod
    def column_command(is_write: bool) -> int:
        return Cmd.WRITE if is_write else Cmd.READ


class ClosePagePolicy:
    """Close the row with the column command itself (RDA / WRA, auto-precharge)."""

    name = "CLOSE_PAGE"

    @staticmethod
    def column_command(is_write: bool) -> int:
        return Cmd.WRITE_PRECHARGE if is_write else Cmd.READ_PRECHARGE


ROW_POLICIES = {cls.name: cls for cls in (OpenPagePolicy, ClosePagePolicy)}
