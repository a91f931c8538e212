"""Per-bank or per-rank command queues, scanned round robin; refresh blocks the queues it involves."""

from memsim.channel_state import ChannelState
from memsim.commands import COLUMN_CMDS, Cmd
from memsim.scheduling import SCHEDULERS, QueuedCommand
from memsim.spec import DramSpec


class CommandQueues:
    """DRAMSim3's CommandQueue: the scan starts after the queue that issued last."""

    def __init__(self, spec: DramSpec, state: ChannelState) -> None:
        self.spec = spec
        self.state = state
        self.per_bank = spec.queue_structure == "PER_BANK"
        self.n_queues = spec.ranks * spec.banks if self.per_bank else spec.ranks
        self.queues: list[list[QueuedCommand]] = [[] for _ in range(self.n_queues)]
        self.capacity = spec.cmd_queue_size
        self.scheduler = SCHEDULERS[spec.scheduler](state)
        self.queue_idx = 0
        self.count = 0
        self.in_refresh = False
        self.refresh_queues: frozenset[int] = frozenset()

    def index(self, rank: int, bank: int) -> int:
        """Queue of a flat bank number (rank-major)."""
        return bank if self.per_bank else rank

    def will_accept(self, rank: int, bank: int) -> bool:
        return len(self.queues[bank if self.per_bank else rank]) < self.capacity

    def add(self, qc: QueuedCommand) -> None:
        self.queues[qc.bank if self.per_bank else qc.rank].append(qc)
        self.count += 1

    def next_command(self, clk: int, take: bool = True) -> tuple[int, QueuedCommand] | None:
        """Round-robin scan; a picked column command leaves its queue unless `take` is False."""
        n, queues, skip = self.n_queues, self.queues, self.refresh_queues if self.in_refresh else ()
        idx = self.queue_idx
        first_ready = self.scheduler.first_ready
        for _ in range(n):
            idx += 1
            if idx == n:
                idx = 0
            queue = queues[idx]
            if not queue or idx in skip:
                continue
            found = first_ready(queue, clk)
            if found is not None:
                self.queue_idx = idx
                if take and found[0] in COLUMN_CMDS:
                    self.remove(found[1])
                return found
        return None

    def remove(self, qc: QueuedCommand) -> None:
        self.queues[qc.bank if self.per_bank else qc.rank].remove(qc)
        self.count -= 1

    def begin_refresh(self, cmd: int, rank: int, bank: int) -> None:
        """Freeze the queues a pending refresh involves until it issues."""
        if self.in_refresh:
            return
        self.in_refresh = True
        if cmd == Cmd.REFRESH:
            if self.per_bank:
                base = rank * self.spec.banks
                self.refresh_queues = frozenset(range(base, base + self.spec.banks))
            else:
                self.refresh_queues = frozenset((rank,))
        else:
            self.refresh_queues = frozenset((bank if self.per_bank else rank,))

    def end_refresh(self) -> None:
        self.in_refresh = False
        self.refresh_queues = frozenset()

    def ready_at(self) -> int | None:
        """Earliest cycle any unfrozen queue could issue, given no other change (None: nothing can)."""
        best = None
        skip = self.refresh_queues if self.in_refresh else ()
        ready_at = self.scheduler.ready_at
        for idx, queue in enumerate(self.queues):
            if queue and idx not in skip:
                at = ready_at(queue)
                if at is not None and (best is None or at < best):
                    best = at
        return best
