"""Per-bank or per-rank command queues, scanned round robin; refresh blocks the queues it involves.

Each queue keeps a lower bound on the cycle it can next issue. Timing constraints only ever move later
and activation windows only fill, so a bound stays valid until the queue's contents or its bank's state
change (then it is reset to 0, "look again"); the scan skips queues whose bound lies in the future,
and a failed look recomputes the exact bound. This is what makes busy scans cheap and lets the
controller sleep until the earliest bound.
"""

from memsim.channel_state import ChannelState
from memsim.commands import COLUMN_CMDS, Cmd
from memsim.scheduling import SCHEDULERS, QueuedCommand
from memsim.spec import DramSpec

NEVER_READY = 1 << 62


class CommandQueues:
    """DRAMSim3's CommandQueue: the scan starts after the queue that issued last."""

    def __init__(self, spec: DramSpec, state: ChannelState) -> None:
        self.spec = spec
        self.state = state
        self.per_bank = spec.queue_structure == "PER_BANK"
        self.n_queues = spec.ranks * spec.banks if self.per_bank else spec.ranks
        self.queues: list[list[QueuedCommand]] = [[] for _ in range(self.n_queues)]
        self.bound = [NEVER_READY] * self.n_queues
        self.capacity = spec.cmd_queue_size
        self.scheduler = SCHEDULERS[spec.scheduler](state, self.per_bank)
        self.queue_idx = 0
        self.count = 0
        self.dirty = True  # a command left a queue: the transaction scheduler should look again
        self.in_refresh = False
        self.refresh_queues: frozenset[int] = frozenset()

    def will_accept(self, rank: int, bank: int) -> bool:
        return len(self.queues[bank if self.per_bank else rank]) < self.capacity

    def add(self, qc: QueuedCommand) -> None:
        q = qc.bank if self.per_bank else qc.rank
        self.queues[q].append(qc)
        self.bound[q] = 0
        self.count += 1

    def remove(self, qc: QueuedCommand) -> None:
        q = qc.bank if self.per_bank else qc.rank
        self.queues[q].remove(qc)
        self.bound[q] = 0
        self.count -= 1
        self.dirty = True

    def bank_changed(self, rank: int, bank: int) -> None:
        """A command changed this bank's state: its queue must be looked at again."""
        self.bound[bank if self.per_bank else rank] = 0

    def next_command(self, clk: int, take: bool = True) -> tuple[int, QueuedCommand] | None:
        """Round-robin scan; a picked column command leaves its queue unless `take` is False."""
        n, queues, bound = self.n_queues, self.queues, self.bound
        if min(bound) > clk:
            return None  # no queue can issue yet (every bound is a valid lower bound)
        skip = self.refresh_queues if self.in_refresh else ()
        idx = self.queue_idx
        first_ready = self.scheduler.first_ready
        for _ in range(n):
            idx += 1
            if idx == n:
                idx = 0
            if bound[idx] > clk or idx in skip:
                continue
            queue = queues[idx]
            if not queue:
                bound[idx] = NEVER_READY
                continue
            found = first_ready(queue, clk)
            if found is None:
                at = self.scheduler.ready_at(queue)
                bound[idx] = NEVER_READY if at is None else at
                continue
            self.queue_idx = idx
            if take and found[0] in COLUMN_CMDS:
                self.remove(found[1])
            return found
        return None

    def begin_refresh(self, cmd: int, rank: int, bank: int) -> None:
        """Freeze the queues a pending refresh involves until it issues."""
        if self.in_refresh:
            return
        self.in_refresh = True
        if cmd == Cmd.REFRESH or cmd == Cmd.RFM:
            if self.per_bank:
                base = rank * self.spec.banks
                self.refresh_queues = frozenset(range(base, base + self.spec.banks))
            else:
                self.refresh_queues = frozenset((rank,))
        elif cmd == Cmd.REFRESH_SAME_BANK:
            self.refresh_queues = frozenset(self.state.same_index_banks(bank)) if self.per_bank else frozenset((rank,))
        else:
            self.refresh_queues = frozenset((bank if self.per_bank else rank,))

    def end_refresh(self) -> None:
        self.in_refresh = False
        self.refresh_queues = frozenset()

    def ready_at(self) -> int:
        """Lower bound on the cycle any unfrozen queue can issue (may lie in the past: look again)."""
        if not self.in_refresh:
            return min(self.bound)
        skip = self.refresh_queues
        return min((b for i, b in enumerate(self.bound) if i not in skip), default=NEVER_READY)
