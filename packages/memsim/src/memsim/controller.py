"""One channel's memory controller, event-driven: `tick(clk)` is DRAMSim3's per-cycle step, and
`next_wake` says the next cycle at which ticking can change anything, so idle cycles are skipped.

Per tick, as DRAMSim3: queue a due refresh; issue the pending refresh's next command or the first ready
command of the round-robin scan (HBM may add a second command of the other kind, row vs column); note
per-rank power state; move one transaction into its command queue. Reads wait in a read queue, writes in
a write buffer that drains when full or when it holds more than `write_drain_threshold` while the
command queues are empty. Reads of an address with a buffered write are served from the buffer
(write-queue forwarding); writes wait for older reads of their address.
"""

from collections.abc import Callable

import numpy as np

from memsim.address_mapping import AddressMapping
from memsim.backing_store import BackingStore
from memsim.channel_state import CLOSED, OPEN, PD, SREF, ChannelState
from memsim.command_queue import CommandQueues
from memsim.commands import COLUMN_CMDS, N_CMD, RANK_CMDS, READS, WRITES, Cmd
from memsim.power_states import RankPowerControl
from memsim.refresh import RefreshManagement, RefreshSchedule
from memsim.row_closer import IdleRowCloser
from memsim.scheduling import ROW_POLICIES, QueuedCommand
from memsim.spec import DramSpec
from memsim.transaction import Transaction

FOREVER = 1 << 62
ACTIVE, IDLE, SELF_REFRESH, POWER_DOWN = 0, 1, 2, 3  # a rank's power state in `power_runs`
POWER_STATE_CODE = {OPEN: ACTIVE, CLOSED: IDLE, SREF: SELF_REFRESH, PD: POWER_DOWN}
REF, REFB, PRE, PD_EXIT = Cmd.REFRESH, Cmd.REFRESH_BANK, Cmd.PRECHARGE, Cmd.PD_EXIT
ACT, REFSB, RFM = Cmd.ACTIVATE, Cmd.REFRESH_SAME_BANK, Cmd.RFM
PLAIN_COLUMN = frozenset((Cmd.READ, Cmd.WRITE))  # leave every bank's open/closed state as it was


class ChannelController:
    """Transaction queues, command queues, refresh and bank state of one channel."""

    def __init__(self, channel: int, spec: DramSpec, mapping: AddressMapping, state: ChannelState,
                 store: BackingStore | None) -> None:  # fmt: skip
        self.channel = channel
        self.spec = spec
        self.mapping = mapping
        self.state = state
        self.store = store
        self.cmdq = CommandQueues(spec, state)
        self.refresh = RefreshSchedule(spec)
        self.column_command = ROW_POLICIES[spec.row_buf_policy].column_command
        self.unified = spec.unified_queue
        self.read_queue: list[Transaction] = []
        self.write_buffer: list[Transaction] = []
        self.jedec = spec.mode == "jedec"
        self.row_closer = IdleRowCloser(state, self.cmdq) if self.jedec and spec.aggressive_precharging else None
        self.rfm = RefreshManagement(spec) if spec.t("RAAIMT") else None
        low_power = spec.enable_self_refresh or spec.enable_power_down
        self.power = RankPowerControl(spec, state, self.cmdq) if low_power else None
        self.capacity = spec.trans_queue_size
        # DRAMSim3 sizes the write buffer by trans_queue_size and never reads write_buf_size; jedec mode honours it
        self.write_capacity = spec.write_buf_size if self.jedec and spec.write_buf_size else self.capacity
        self.pending_reads: dict[int, list[Transaction]] = {}
        self.pending_writes: dict[int, Transaction] = {}
        self.pending_write_data: dict[int, bytes | None] = {}
        self.refresh_queue: list[tuple[int, int, int]] = []
        self.write_draining = 0
        self.next_wake = 0
        self.last_arrival = 0
        self.read_delay, self.write_delay = spec.t("read_delay"), spec.t("write_delay")
        # logs the statistics are computed from (see memsim.stats)
        # the logs as lists (the Python engine appends to them) or, after a compiled run, as arrays only: the
        # lists are then built on first access (`commands`, `completed`)
        self._commands: list[tuple[int, int, int, int, int, int, bool]] | None = []
        self.command_table: np.ndarray | None = None  # `commands` as an int64 array, see command_array()
        self._completed: list[tuple[int, int, bool]] | None = []  # (completion cycle, latency, is_write)
        self.completed_table: np.ndarray | None = None  # `completed` as an int64 array, see completed_array()
        self.interarrivals: list[int] = []
        self.write_latencies: list[int] = []
        self.dual_issue_cycles: list[int] = []
        # (cycle, per-rank power state from then on: ACTIVE, IDLE (all banks closed), SELF_REFRESH, POWER_DOWN)
        self.power_runs: list[tuple[int, tuple[int, ...]]] = [(0, (IDLE,) * spec.ranks)]
        self.on_complete: Callable[[Transaction], None] | None = None
        self.dual_issue = spec.dual_command_issue
        self.power_dirty = False  # a command opened or closed a bank since the last power note
        self.flushing = False  # MemorySystem.flush: drain the write buffer even below the threshold
        self.skip_idle = True  # False: tick every cycle, as DRAMSim3 does (used to test the event logic)

    @property
    def commands(self) -> list[tuple[int, int, int, int, int, int, bool]]:
        """Every command issued: (cycle, cmd, rank, bank, row, column, row hit)."""
        if self._commands is None:
            table = self.command_table
            self._commands = list(zip(*table[:, :6].T.tolist(), table[:, 6].astype(bool).tolist(), strict=True))
        return self._commands

    @commands.setter
    def commands(self, value: list) -> None:
        self._commands, self.command_table = value, None

    @property
    def completed(self) -> list[tuple[int, int, bool]]:
        """Every completed transaction: (completion cycle, latency, is_write)."""
        if self._completed is None:
            table = self.completed_table
            self._completed = list(zip(*table[:, :2].T.tolist(), table[:, 2].astype(bool).tolist(), strict=True))
        return self._completed

    def set_logs(self, command_table: np.ndarray, completed_table: np.ndarray) -> None:
        """Take the logs as arrays (the compiled engine's); the lists are built only if asked for."""
        self._commands, self.command_table = None, command_table
        self._completed, self.completed_table = None, completed_table

    def command_array(self) -> np.ndarray:
        """The command log as an (n, 7) int64 array (cycle, cmd, rank, bank, row, column, hit), cached."""
        table = self.command_table
        if self._commands is not None and (table is None or len(table) != len(self._commands)):
            table = self.command_table = np.array(self._commands, dtype=np.int64).reshape(-1, 7)
        return table

    def completed_array(self) -> np.ndarray:
        """The completions as an (n, 3) int64 array (cycle, latency, is_write), cached."""
        table = self.completed_table
        if self._completed is not None and (table is None or len(table) != len(self._completed)):
            table = self.completed_table = np.array(self._completed, dtype=np.int64).reshape(-1, 3)
        return table

    # ---- frontend side
    def will_accept(self, is_write: bool) -> bool:
        """Room in the transaction queue this request would enter."""
        if self.unified:
            return len(self.read_queue) < self.capacity
        if is_write:
            return len(self.write_buffer) < self.write_capacity
        return len(self.read_queue) < self.capacity

    def add(self, trans: Transaction, clk: int) -> None:
        """Accept a transaction that the tick at `clk` will see first (DRAMSim3's AddTransaction)."""
        trans.added_cycle = clk
        self.interarrivals.append(clk - self.last_arrival)
        self.last_arrival = clk
        addr = trans.addr
        if clk < self.next_wake:
            self.next_wake = clk
        self.cmdq.dirty = True
        if trans.is_write:
            if addr in self.pending_writes:
                self.pending_write_data[addr] = trans.data  # merged into the buffered write: newest data wins
            else:
                self.pending_writes[addr] = trans
                self.pending_write_data[addr] = trans.data
                (self.read_queue if self.unified else self.write_buffer).append(trans)
            self._complete(trans, clk + 1)
            return
        if addr in self.pending_writes:
            trans.data = self.pending_write_data[addr]  # forwarded from the write buffer
            self._complete(trans, clk + 1)
            return
        waiting = self.pending_reads.get(addr)
        if waiting is None:
            self.pending_reads[addr] = [trans]
            self.read_queue.append(trans)
        else:
            waiting.append(trans)  # merged with an in-flight read of the same address

    def _complete(self, trans: Transaction, cycle: int) -> None:
        trans.complete_cycle = cycle
        log = self._completed if self._completed is not None else self.completed  # (builds the list if needed)
        log.append((cycle, cycle - trans.added_cycle, trans.is_write))
        if self.on_complete is not None:
            self.on_complete(trans)

    # ---- the per-cycle step
    def tick(self, clk: int) -> None:
        """Simulate cycle `clk`, then set `next_wake`."""
        if clk >= self.refresh.next_due:
            sleeping = self.power.in_self_refresh() if self.power is not None else None
            self.refresh_queue.extend(self.refresh.due(clk, sleeping))
        issued = None
        if self.refresh_queue:
            issued = self._refresh_step(clk)
        if issued is None:
            found = self.cmdq.next_command(clk)
            if found is not None:
                issued = found[0]
                self._issue(found[0], found[1], clk)
        if issued is None and self.row_closer is not None:
            idle = self.row_closer.candidate(clk)
            if idle is not None:
                self._log_and_apply(PRE, idle[0], idle[1], -1, -1, clk, False)
                issued = PRE
        if issued is None and self.power is not None:
            step = self.power.command(clk)
            if step is not None:
                issued = step[0]
                self._log_and_apply(step[0], step[1], step[2], -1, -1, clk, False)
        if issued is not None:
            if self.dual_issue:
                self._second_command(issued, clk)
            if self.power_dirty:
                self._note_power(clk)
        if not self.skip_idle:
            self.cmdq.dirty = True
        moved = self._schedule_transaction()
        if self.power is not None:
            self.power.update(clk, self.refresh_queue)
        if moved or not self.skip_idle:
            self.next_wake = clk + 1
        else:
            self.next_wake = self._next_event(clk)

    def _second_command(self, first: int, clk: int) -> None:
        found = self.cmdq.next_command(clk, take=False)
        if found is None or (found[0] in COLUMN_CMDS) == (first in COLUMN_CMDS):
            return  # one row and one column command per cycle at most
        if found[0] in COLUMN_CMDS:
            self.cmdq.remove(found[1])
        self._issue(found[0], found[1], clk)
        self.dual_issue_cycles.append(clk)

    def _refresh_step(self, clk: int) -> int | None:
        cmd, rank, bank = self.refresh_queue[0]
        self.cmdq.begin_refresh(cmd, rank, bank)
        st = self.state
        if cmd in (REF, RFM):
            ready = st.rank_ready(cmd, rank, clk)
        elif cmd == REFSB:
            ready = st.same_bank_ready(cmd, bank, clk)
        else:
            req = st.required(REFB, bank, -1)
            ready = (req, bank) if clk >= st.earliest[bank * N_CMD + req] else None
        if ready is None:
            return None
        req, target = ready
        if req in (PRE, PD_EXIT):  # close the rank's rows, or wake it from power-down, first
            self._log_and_apply(req, rank, target if req == PRE else rank * self.spec.banks, -1, -1, clk, False)
            return req
        self.refresh_queue.pop(0)
        self.cmdq.end_refresh()
        self._log_and_apply(cmd, rank, bank, -1, -1, clk, False)
        if cmd == RFM:
            self.rfm.issued(rank)
        return cmd

    def _issue(self, req: int, qc: QueuedCommand, clk: int) -> None:
        addr = qc.addr
        if req in READS:
            data = self.store.read(self.mapping.wrap(addr)) if self.store is not None else None
            for trans in self.pending_reads.pop(addr):
                trans.data = data
                self._complete(trans, clk + self.read_delay)
        elif req in WRITES:
            trans = self.pending_writes.pop(addr)
            data = self.pending_write_data.pop(addr)
            if self.store is not None and data is not None:
                self.store.write(self.mapping.wrap(addr), data)
            self.write_latencies.append(clk - trans.added_cycle + self.write_delay)
        hit = req in COLUMN_CMDS and self.state.row_hits[qc.bank] != 0
        self._log_and_apply(req, qc.rank, qc.bank, qc.row, qc.column, clk, hit)

    def _log_and_apply(self, cmd: int, rank: int, bank: int, row: int, column: int, clk: int, hit: bool) -> None:
        log = self._commands if self._commands is not None else self.commands  # (builds the list if needed)
        log.append((clk, cmd, rank, bank, row, column, hit))
        self.state.issue(cmd, bank, row, rank, clk)
        if cmd not in PLAIN_COLUMN:
            self.power_dirty = True
        if cmd in RANK_CMDS:
            for b in range(rank * self.spec.banks, (rank + 1) * self.spec.banks):
                self.cmdq.bank_changed(rank, b)
        elif cmd == REFSB:
            for b in self.state.same_index_banks(bank):
                self.cmdq.bank_changed(rank, b)
        elif cmd == ACT and self.rfm is not None and self.rfm.activated(rank, bank):
            self.refresh_queue.append((RFM, rank, rank * self.spec.banks))
        else:
            self.cmdq.bank_changed(rank, bank)

    def _note_power(self, clk: int) -> None:
        st = self.state
        self.power_dirty = False
        states = tuple(POWER_STATE_CODE[st.rank_power_state(r)] for r in range(self.spec.ranks))
        if states != self.power_runs[-1][1]:
            self.power_runs.append((clk, states))

    def _schedule_transaction(self) -> bool:
        """Move at most one transaction to its command queue; True if anything changed.

        The outcome only changes when a transaction arrives or a command leaves a command queue, so a
        scan that found nothing is not repeated until one of those happens (`cmdq.dirty`).
        """
        cmdq = self.cmdq
        if not cmdq.dirty:
            return False
        draining_before = self.write_draining
        if self.write_draining == 0 and not self.unified and self._drain_due():
            self.write_draining = len(self.write_buffer)
        if self.unified:
            moved = self._move_first(self.read_queue)
        elif self.write_draining > 0:
            moved = self._move_first(self.write_buffer)
            if not moved and self.write_draining == 0 and self.jedec and self._drain_due():
                # The write that fits waits for an older read still in the read queue. DRAMSim3 restarts the
                # drain every cycle and livelocks here (dramsim3 mode does too); jedec mode moves a read instead.
                moved = self._move_first(self.read_queue)
        else:
            moved = self._move_first(self.read_queue)
        if moved or self.write_draining != draining_before:
            return True
        cmdq.dirty = False
        return False

    def _drain_due(self) -> bool:
        n = len(self.write_buffer)
        if self.flushing and n:
            return True
        return n >= self.write_capacity or (n > self.spec.write_drain_threshold and self.cmdq.count == 0)

    def _move_first(self, queue: list[Transaction]) -> bool:
        """Move the oldest transaction whose command queue has room; a write blocked by a read stops the drain."""
        cmdq = self.cmdq
        queues, cap, per_bank = cmdq.queues, cmdq.capacity, cmdq.per_bank
        for i, trans in enumerate(queue):
            where = trans.where
            if where is None:
                where = trans.where = self._locate(trans.addr)
            rank, bg, ba, bank, row, col = where
            if len(queues[bank if per_bank else rank]) >= cap:
                continue
            if trans.is_write and not self.unified:
                if trans.addr in self.pending_reads:  # an older read of this address goes first
                    self.write_draining = 0
                    return False
                self.write_draining -= 1
            cmdq.add(QueuedCommand(self.column_command(trans.is_write), trans.addr, rank, bg, ba, bank, row, col))
            del queue[i]
            return True
        return False

    def _locate(self, addr: int) -> tuple[int, int, int, int, int, int]:
        _, rank, bg, ba, row, col = self.mapping.decode(addr)
        return rank, bg, ba, (rank * self.spec.bankgroups + bg) * self.spec.banks_per_group + ba, row, col

    def _next_event(self, clk: int) -> int:
        """Earliest later cycle at which a tick could do something, assuming no new arrivals."""
        best = self.refresh.next_due
        if self.refresh_queue:
            cmd, rank, bank = self.refresh_queue[0]
            st = self.state
            if cmd in (REF, RFM):
                at = st.rank_ready_at(cmd, rank)
            elif cmd == REFSB:
                at = st.same_bank_ready_at(cmd, bank)
            else:
                at = st.earliest[bank * N_CMD + st.required(REFB, bank, -1)]
            best = min(best, at)
        if self.cmdq.count:
            best = min(best, self.cmdq.ready_at())
        if self.row_closer is not None:
            best = min(best, self.row_closer.ready_at())
        if self.power is not None:
            best = min(best, self.power.next_event())
        return max(best, clk + 1)
