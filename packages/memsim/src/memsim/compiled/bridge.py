"""Runs a `TraceFrontend` on the compiled engine (memsim's C++ engine, `memsim.cosim.native`, through ctypes):
state from the Python objects in, results back out.

The compiled engine starts from a fresh `MemorySystem` (nothing simulated yet) and, when it stops,
writes every log and every piece of controller state back into the Python objects, so `stats()`,
`issued_commands()`, the checker and further Python-side simulation see exactly what the Python
engine would have left (tests compare the two).
"""

import ctypes
import gc
from collections import namedtuple
from collections.abc import Callable

import numpy as np

from memsim.channel_params import ChannelParams, unsupported_scheduling
from memsim.commands import Cmd
from memsim.compiled import layout as L
from memsim.compiled.library import load_library, pointer
from memsim.errors import MemsimError
from memsim.scheduling import QueuedCommand
from memsim.timing_table import NEVER as NO_CONSTRAINT
from memsim.trace_data import address_array
from memsim.transaction import Transaction

EngineArrays = namedtuple("EngineArrays", "K CH TR AD LOGT LOGC G layout")
REF_POLICIES = {"RANK_LEVEL_STAGGERED": L.REF_STAGGERED, "RANK_LEVEL_SIMULTANEOUS": L.REF_SIMULTANEOUS,
                "BANK_LEVEL_STAGGERED": L.REF_PER_BANK}  # fmt: skip
CHUNK_CYCLES = 1 << 20  # progress is reported between chunks
MIN_COMMAND_LOG = 1024  # initial rows of the command log per channel; doubled when full


def is_fresh(frontend) -> bool:
    """Nothing simulated or queued yet, no instrumentation: the compiled engine reproduces this run."""
    system = frontend.system
    if system.clk != 0 or system._callbacks or frontend.index != 0:
        return False
    for ctrl in system.channels:
        if len(ctrl.command_array()) or ctrl.interarrivals or ctrl.read_queue or ctrl.write_buffer or ctrl.pending_reads \
                or ctrl.pending_writes or ctrl.refresh_queue or ctrl.next_wake != 0 or not ctrl.skip_idle \
                or ctrl.flushing or "tick" in vars(ctrl) or ctrl.on_complete != system._schedule_callback \
                or ctrl.refresh.next_due != ctrl.refresh.interval:  # fmt: skip
            return False
    return True


def unsupported(spec) -> str | None:
    """What of this spec the compiled engine does not model (its runs then use the Python engine), or None."""
    missing = unsupported_scheduling(spec)
    if missing is not None:
        return missing
    if spec.mode == "jedec" and spec.aggressive_precharging:
        return "aggressive precharging (jedec mode)"
    if spec.enable_self_refresh or spec.enable_power_down:
        return "self-refresh or power-down"
    if spec.refresh_policy == "SAME_BANK" or spec.t("RAAIMT"):
        return "DDR5 same-bank refresh or refresh management"
    return None


def _offsets_csr(offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    flat = offsets.reshape(offsets.shape[0] * offsets.shape[1], -1)
    mask = flat != NO_CONSTRAINT
    start = np.zeros(flat.shape[0] + 1, dtype=np.int64)
    np.cumsum(mask.sum(axis=1), out=start[1:])
    return start, np.nonzero(mask)[1].astype(np.int64), flat[mask].astype(np.int64)


def _decode(frontend) -> tuple[np.ndarray, np.ndarray]:
    """TR rows (address id, write, cycle, channel, rank, flat bank, row, column, ...) and the distinct addresses."""
    system, spec = frontend.system, frontend.system.spec
    fields = system.mapping.decode_array(frontend.locations)
    distinct, aid = np.unique(address_array(frontend.addrs), return_inverse=True)
    TR = np.full((len(frontend.addrs), L.T_SIZE), -1, dtype=np.int64)
    TR[:, L.T_AID] = aid
    TR[:, L.T_WRITE] = np.asarray(frontend.writes, dtype=np.int64)
    TR[:, L.T_CYCLE] = np.asarray(frontend.cycles, dtype=np.int64)
    TR[:, L.T_CH] = fields["ch"]
    TR[:, L.T_RANK] = fields["ra"]
    TR[:, L.T_BANK] = (fields["ra"] * spec.bankgroups + fields["bg"]) * spec.banks_per_group + fields["ba"]
    TR[:, L.T_ROW] = fields["ro"]
    TR[:, L.T_COL] = fields["co"]
    return TR, distinct


def _config(system, layout: L.ChannelLayout) -> np.ndarray:
    spec, c0 = system.spec, system.channels[0]
    params = ChannelParams(spec)  # the scheduler and row policy, as the RTL takes them
    windows = np.array(c0.state.windows, dtype=np.int64).reshape(-1)
    off_start, off_idx, off_lat = _offsets_csr(c0.state._offsets)
    head = np.zeros(L.K_HEADER, dtype=np.int64)
    values = {
        L.K_NB: layout.n_banks, L.K_BPR: spec.banks, L.K_RANKS: spec.ranks, L.K_NQ: layout.n_queues,
        L.K_PER_BANK: c0.cmdq.per_bank, L.K_CQ: layout.cmd_queue, L.K_TQ: layout.trans_queue,
        L.K_UNIFIED: c0.unified, L.K_DUAL: c0.dual_issue, L.K_FCFS: params.fcfs,
        L.K_RD_CMD: params.read_column, L.K_WR_CMD: params.write_column, L.K_READ_DELAY: c0.read_delay,
        L.K_WRITE_DELAY: c0.write_delay, L.K_DRAIN: spec.write_drain_threshold,
        L.K_REF_POLICY: REF_POLICIES[c0.refresh.policy], L.K_REF_INTERVAL: c0.refresh.interval,
        L.K_BG: spec.bankgroups, L.K_BPG: spec.banks_per_group, L.K_NCH: spec.channels,
        L.K_NW: layout.n_windows, L.K_WCAP: layout.window_cap, L.K_JEDEC: c0.jedec, L.K_WBCAP: c0.write_capacity,
        L.K_ALL_RANKS: c0.refresh.all_ranks,
    }  # fmt: skip
    offsets, _ = layout.offsets()
    values.update(offsets)
    tail, pos = [], L.K_HEADER
    for key, part in ((L.O_WIN, windows), (L.O_OFF_START, off_start), (L.O_OFF_IDX, off_idx), (L.O_OFF_LAT, off_lat)):
        values[key] = pos
        tail.append(part)
        pos += len(part)
    for key, value in values.items():
        head[key] = int(value)
    return np.concatenate([head, *tail]).astype(np.int64)


def channel_layout(system) -> L.ChannelLayout:
    """Segment sizes of one channel's row for `system` (a fresh MemorySystem)."""
    c0 = system.channels[0]
    windows = c0.state.windows
    return L.ChannelLayout(c0.state.n_banks, system.spec.ranks, c0.cmdq.n_queues, c0.cmdq.capacity, c0.capacity,
                           c0.write_capacity, len(windows), max([1] + [count for count, _ in windows]))  # fmt: skip


def engine_config(system) -> tuple[np.ndarray, L.ChannelLayout]:
    """The K array (configuration, segment offsets, windows, timing offsets) and the layout it describes;
    also what memsim's native engine (memsim.cosim.native) reads, so both compiled engines share one source."""
    layout = channel_layout(system)
    return _config(system, layout), layout


def build_arrays(frontend) -> EngineArrays:
    system = frontend.system
    spec, c0 = system.spec, system.channels[0]
    nch, ranks = spec.channels, spec.ranks
    K, layout = engine_config(system)
    _, row_len = layout.offsets()
    CH = np.zeros((nch, row_len), dtype=np.int64)
    for ch in range(nch):
        row = CH[ch]
        row[L.S_NEXT_DUE], row[L.S_PWR_LEN], row[L.S_DIRTY] = c0.refresh.interval, 1, 1
        layout.view(row, L.O_OPEN_ROW)[:] = -1
        layout.view(row, L.O_BOUND)[:] = L.NEVER
    TR, distinct = _decode(frontend)
    per_channel = int(np.bincount(TR[:, L.T_CH], minlength=nch).max()) if len(TR) else 0
    LOGT = np.zeros((nch, max(per_channel, 1), 5), dtype=np.int64)
    LOGC = np.zeros((nch, max(MIN_COMMAND_LOG, 4 * per_channel), L.C_PWR + 1 + ranks), dtype=np.int64)
    LOGC[:, 0, L.C_PWR + 1 :] = 1  # cycle 0: every rank idle
    AD = np.full((len(distinct), 3), -1, dtype=np.int64)
    G = np.array([frontend.index, frontend.n, frontend.one_shot], dtype=np.int64)
    return EngineArrays(K, CH, TR, AD, LOGT, LOGC, G, layout), distinct


def _grow(a: EngineArrays) -> EngineArrays:
    """Double the command log (its length is not known in advance)."""
    out = np.zeros((a.LOGC.shape[0], 2 * a.LOGC.shape[1], a.LOGC.shape[2]), dtype=np.int64)
    out[:, : a.LOGC.shape[1]] = a.LOGC
    return a._replace(LOGC=out)


def _run_native(a: EngineArrays, c: int, stop: int) -> tuple[int, int]:
    """The C++ engine's trace run (engine_capi.cc memsim_trace_run): (cycle reached, status)."""
    lib = load_library()
    dims = np.array([a.CH.shape[0], a.CH.shape[1], a.LOGT.shape[1], a.LOGC.shape[1], a.LOGC.shape[2]], dtype=np.int64)
    reached = ctypes.c_longlong(c)
    arrays = (a.K, a.CH, a.TR, a.AD, a.LOGT, a.LOGC, a.G, dims)
    status = lib.memsim_trace_run(*(pointer(x) for x in arrays), c, stop, ctypes.byref(reached))
    return reached.value, status


def run_compiled(frontend, num_cycles: int, progress: Callable[[int], None] | None = None) -> None:
    """Simulate [0, num_cycles) on the compiled engine and leave the Python objects as the Python engine would."""
    a, distinct = build_arrays(frontend)
    c = 0
    while c < num_cycles:
        stop = min(num_cycles, c + CHUNK_CYCLES) if progress is not None else num_cycles
        c, status = _run_native(a, c, stop)
        if status == 1:
            a = _grow(a)
        elif progress is not None:
            progress(min(c, num_cycles))
    gc_was_enabled = gc.isenabled()
    gc.disable()  # export builds ~10^5 small tuples; collections would rescan them
    try:
        export(frontend, a, distinct)
    finally:
        if gc_was_enabled:
            gc.enable()
    frontend.system.clk = num_cycles


def export(frontend, a: EngineArrays, distinct: np.ndarray) -> None:
    """Write the engine's logs and final state into the MemorySystem's Python objects."""
    system = frontend.system
    spec, layout = system.spec, a.layout
    addr_of = distinct.tolist()
    TR = a.TR
    trans: dict[int, Transaction] = {}

    def transaction(t: int) -> Transaction:
        if t not in trans:
            row = TR[t].tolist()
            tr = Transaction(int(frontend.addrs[t]), bool(row[L.T_WRITE]))
            tr.added_cycle, tr.complete_cycle = row[L.T_ADDED], row[L.T_COMPLETE]
            bank = row[L.T_BANK] - row[L.T_RANK] * spec.banks
            tr.where = (row[L.T_RANK], bank // spec.banks_per_group, bank % spec.banks_per_group, row[L.T_BANK],
                        row[L.T_ROW], row[L.T_COL])  # fmt: skip
            trans[t] = tr
        return trans[t]

    for ch, ctrl in enumerate(system.channels):
        row = a.CH[ch]
        s = row[: L.S_SIZE].tolist()
        view = lambda key, row=row: layout.view(row, key)  # noqa: E731
        _export_state(ctrl.state, view)
        logc, logt = a.LOGC[ch], a.LOGT[ch]
        n_cmd, n_done = s[L.S_CMD_LEN], s[L.S_COMP_LEN]
        done = logt[:n_done]
        ctrl.set_logs(logc[:n_cmd, : L.C_HIT + 1].copy(), done[:, : L.L_COMP_WRITE + 1].copy())
        ctrl.interarrivals = logt[: s[L.S_IA_LEN], L.L_IA].tolist()
        ctrl.write_latencies = logt[: s[L.S_WL_LEN], L.L_WL].tolist()
        ctrl.dual_issue_cycles = logc[: s[L.S_DUAL_LEN], L.C_DUAL].tolist()
        ctrl.power_runs = [(p[0], tuple(p[1:])) for p in logc[: s[L.S_PWR_LEN], L.C_PWR :].tolist()]
        ctrl.write_draining, ctrl.next_wake = s[L.S_WRITE_DRAINING], s[L.S_NEXT_WAKE]
        ctrl.last_arrival, ctrl.power_dirty = s[L.S_LAST_ARRIVAL], bool(s[L.S_POWER_DIRTY])
        rs = ctrl.refresh
        head, pending = s[L.S_RFQ_HEAD], s[L.S_RFQ_LEN]
        rs.next_due, rs.pushed = s[L.S_NEXT_DUE], head + pending
        ctrl.refresh_queue = [rs.entry(head + i) for i in range(pending)]
        ctrl.read_queue = [transaction(t) for t in view(L.O_RQ)[: s[L.S_RQ_LEN]].tolist()]
        ctrl.write_buffer = [transaction(t) for t in view(L.O_WB)[: s[L.S_WB_LEN]].tolist()]
        cmdq = ctrl.cmdq
        cmdq.scheduler.ondemand_precharges = s[L.S_ONDEMAND]
        cmdq.queue_idx, cmdq.count, cmdq.dirty = s[L.S_QUEUE_IDX], s[L.S_COUNT], bool(s[L.S_DIRTY])
        cmdq.in_refresh = bool(s[L.S_IN_REFRESH])
        cmdq.refresh_queues = frozenset(range(s[L.S_SKIP_LO], s[L.S_SKIP_HI])) if cmdq.in_refresh else frozenset()
        cmdq.bound = view(L.O_BOUND).tolist()
        qlen, Q = view(L.O_QLEN), view(L.O_Q)
        cmdq.queues = [[_queued(spec, f, addr_of) for f in Q[q, : qlen[q]].tolist()] for q in range(cmdq.n_queues)]
    chans = TR[:, L.T_CH]
    for aid in np.nonzero(a.AD[:, L.A_PR_HEAD] >= 0)[0].tolist():
        head = t = int(a.AD[aid, L.A_PR_HEAD])
        chain = []
        while t >= 0:
            chain.append(transaction(t))
            t = int(TR[t, L.T_NEXT])
        system.channels[int(chans[head])].pending_reads[addr_of[aid]] = chain
    for aid in np.nonzero(a.AD[:, L.A_PW] >= 0)[0].tolist():
        t = int(a.AD[aid, L.A_PW])
        ctrl = system.channels[int(chans[t])]
        ctrl.pending_writes[addr_of[aid]] = transaction(t)
        ctrl.pending_write_data[addr_of[aid]] = None
    frontend.index = int(a.G[L.G_INDEX])
    if frontend.index > frontend.n:
        raise MemsimError("compiled engine: frontend cursor out of range")


def _queued(spec, f: list[int], addr_of: list[int]) -> QueuedCommand:
    rank, bank = f[L.QF_RANK], f[L.QF_BANK]
    in_rank = bank - rank * spec.banks
    return QueuedCommand(Cmd(f[L.QF_CMD]), addr_of[f[L.QF_AID]], rank, in_rank // spec.banks_per_group,
                         in_rank % spec.banks_per_group, bank, f[L.QF_ROW], f[L.QF_COL])  # fmt: skip


def _export_state(st, view: Callable[[int], np.ndarray]) -> None:
    st._earliest[:] = view(L.O_E)
    st.earliest = st._earliest.tolist()
    st.state, st.open_row = view(L.O_BSTATE).tolist(), view(L.O_OPEN_ROW).tolist()
    st.row_hits, st.open_banks_in_rank = view(L.O_ROW_HITS).tolist(), view(L.O_OPENR).tolist()
    lengths, expiries = view(L.O_ACTW_LEN), view(L.O_ACTW)
    st.act_windows = [[expiries[r, w, : lengths[r, w]].tolist() for w in range(lengths.shape[1])]
                      for r in range(lengths.shape[0])]  # fmt: skip
