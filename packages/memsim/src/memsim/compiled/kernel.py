"""The compiled controller: numba twins of `CommandQueues` and `ChannelController`.

Same steps in the same order as the Python classes (read them for the reasons), on the arrays of
`memsim.compiled.layout`; `memsim.compiled.frontend_kernel` drives `tick` from a trace.
"""

# ruff: noqa: SIM109  (explicit comparisons and loops: what numba compiles best)

from numba import njit

from memsim.compiled.bank_kernel import (
    earliest,
    first_ready,
    qf,
    rank_ready,
    rank_ready_at,
    ready_at,
    required,
    state_issue,
)  # fmt: skip
from memsim.compiled.layout import (
    A_PR_HEAD,
    A_PW,
    C_BANK,
    C_CMD,
    C_COL,
    C_CYCLE,
    C_DUAL,
    C_HIT,
    C_PWR,
    C_RANK,
    C_ROW,
    K_ALL_RANKS,
    K_BG,
    K_BPG,
    K_BPR,
    K_CQ,
    K_DRAIN,
    K_DUAL,
    K_JEDEC,
    K_NQ,
    K_PER_BANK,
    K_RANKS,
    K_RD_CMD,
    K_READ_DELAY,
    K_REF_INTERVAL,
    K_REF_POLICY,
    K_UNIFIED,
    K_WBCAP,
    K_WR_CMD,
    K_WRITE_DELAY,
    L_COMP_CYCLE,
    L_COMP_LAT,
    L_COMP_WRITE,
    L_WL,
    NEVER,
    O_BOUND,
    O_OPENR,
    O_Q,
    O_QLEN,
    O_ROW_HITS,
    O_RQ,
    O_WB,
    PRE,
    QF_AID,
    QF_BANK,
    QF_CMD,
    QF_COL,
    QF_RANK,
    QF_ROW,
    QF_SIZE,
    RD,
    RDA,
    REF,
    REF_PER_BANK,
    REF_SIMULTANEOUS,
    REFB,
    S_CMD_LEN,
    S_COMP_LEN,
    S_COUNT,
    S_DIRTY,
    S_DUAL_LEN,
    S_IN_REFRESH,
    S_NEXT_DUE,
    S_NEXT_WAKE,
    S_POWER_DIRTY,
    S_PWR_LEN,
    S_QUEUE_IDX,
    S_RFQ_HEAD,
    S_RFQ_LEN,
    S_RQ_LEN,
    S_SKIP_HI,
    S_SKIP_LO,
    S_WB_LEN,
    S_WL_LEN,
    S_WRITE_DRAINING,
    T_ADDED,
    T_AID,
    T_BANK,
    T_COL,
    T_COMPLETE,
    T_NEXT,
    T_RANK,
    T_ROW,
    T_WRITE,
    WR,
    WRA,
)  # fmt: skip


# ---- command queues (memsim.command_queue)
@njit(cache=True)
def _queue_of(K, rank, bank):
    return bank if K[K_PER_BANK] else rank


@njit(cache=True)
def _remove(K, CH, ch, q, pos):
    n = CH[ch, K[O_QLEN] + q]
    base = K[O_Q] + q * K[K_CQ] * QF_SIZE
    for i in range(base + pos * QF_SIZE, base + (n - 1) * QF_SIZE):
        CH[ch, i] = CH[ch, i + QF_SIZE]
    CH[ch, K[O_QLEN] + q] = n - 1
    CH[ch, K[O_BOUND] + q] = 0
    CH[ch, S_COUNT] -= 1
    CH[ch, S_DIRTY] = 1


@njit(cache=True)
def _next_command(K, CH, ch, clk):
    """CommandQueues.next_command without taking: (command, queue, position), position -1 for None."""
    nq, b0 = K[K_NQ], K[O_BOUND]
    lowest = NEVER
    for i in range(nq):
        lowest = min(lowest, CH[ch, b0 + i])
    if lowest > clk:
        return -1, -1, -1
    in_refresh = CH[ch, S_IN_REFRESH]
    lo, hi = CH[ch, S_SKIP_LO], CH[ch, S_SKIP_HI]
    idx = CH[ch, S_QUEUE_IDX]
    for _ in range(nq):
        idx += 1
        if idx == nq:
            idx = 0
        if CH[ch, b0 + idx] > clk or (in_refresh and lo <= idx < hi):
            continue
        if CH[ch, K[O_QLEN] + idx] == 0:
            CH[ch, b0 + idx] = NEVER
            continue
        req, pos = first_ready(K, CH, ch, idx, clk)
        if pos < 0:
            CH[ch, b0 + idx] = ready_at(K, CH, ch, idx)
            continue
        CH[ch, S_QUEUE_IDX] = idx
        return req, idx, pos
    return -1, -1, -1


@njit(cache=True)
def _cmdq_ready_at(K, CH, ch):
    best = NEVER
    in_refresh = CH[ch, S_IN_REFRESH]
    lo, hi = CH[ch, S_SKIP_LO], CH[ch, S_SKIP_HI]
    for i in range(K[K_NQ]):
        if not (in_refresh and lo <= i < hi):
            best = min(best, CH[ch, K[O_BOUND] + i])
    return best


@njit(cache=True)
def _begin_refresh(K, CH, ch, cmd, rank, bank):
    if CH[ch, S_IN_REFRESH]:
        return
    CH[ch, S_IN_REFRESH] = 1
    if cmd == REF and K[K_PER_BANK]:
        lo, hi = rank * K[K_BPR], (rank + 1) * K[K_BPR]
    elif cmd == REF:
        lo, hi = rank, rank + 1
    else:
        lo = _queue_of(K, rank, bank)
        hi = lo + 1
    CH[ch, S_SKIP_LO], CH[ch, S_SKIP_HI] = lo, hi


# ---- controller (memsim.controller)
@njit(cache=True)
def _complete(CH, TR, LOGT, ch, t, cycle):
    TR[t, T_COMPLETE] = cycle
    n = CH[ch, S_COMP_LEN]
    LOGT[ch, n, L_COMP_CYCLE] = cycle
    LOGT[ch, n, L_COMP_LAT] = cycle - TR[t, T_ADDED]
    LOGT[ch, n, L_COMP_WRITE] = TR[t, T_WRITE]
    CH[ch, S_COMP_LEN] = n + 1


@njit(cache=True)
def _log_and_apply(K, CH, LOGC, ch, cmd, rank, bank, row, col, clk, hit):
    n = CH[ch, S_CMD_LEN]
    LOGC[ch, n, C_CYCLE], LOGC[ch, n, C_CMD], LOGC[ch, n, C_RANK], LOGC[ch, n, C_BANK] = clk, cmd, rank, bank
    LOGC[ch, n, C_ROW], LOGC[ch, n, C_COL], LOGC[ch, n, C_HIT] = row, col, hit
    CH[ch, S_CMD_LEN] = n + 1
    state_issue(K, CH, ch, cmd, bank, row, rank, clk)
    if cmd != RD and cmd != WR:
        CH[ch, S_POWER_DIRTY] = 1
    if cmd == REF:
        bpr = K[K_BPR]
        for b in range(rank * bpr, (rank + 1) * bpr):
            CH[ch, K[O_BOUND] + _queue_of(K, rank, b)] = 0
    else:
        CH[ch, K[O_BOUND] + _queue_of(K, rank, bank)] = 0


@njit(cache=True)
def _issue_found(K, CH, TR, AD, LOGT, LOGC, ch, req, q, pos, clk):
    """Take a found command off its queue (column commands only) and issue it (ChannelController._issue)."""
    aid, rank, bank = qf(K, CH, ch, q, pos, QF_AID), qf(K, CH, ch, q, pos, QF_RANK), qf(K, CH, ch, q, pos, QF_BANK)
    row, col = qf(K, CH, ch, q, pos, QF_ROW), qf(K, CH, ch, q, pos, QF_COL)
    if req < 4:
        _remove(K, CH, ch, q, pos)
    if req == RD or req == RDA:
        t = AD[aid, A_PR_HEAD]
        AD[aid, A_PR_HEAD] = -1
        while t >= 0:
            _complete(CH, TR, LOGT, ch, t, clk + K[K_READ_DELAY])
            t = TR[t, T_NEXT]
    elif req == WR or req == WRA:
        t = AD[aid, A_PW]
        AD[aid, A_PW] = -1
        n = CH[ch, S_WL_LEN]
        LOGT[ch, n, L_WL] = clk - TR[t, T_ADDED] + K[K_WRITE_DELAY]
        CH[ch, S_WL_LEN] = n + 1
    hit = 1 if req < 4 and CH[ch, K[O_ROW_HITS] + bank] != 0 else 0
    _log_and_apply(K, CH, LOGC, ch, req, rank, bank, row, col, clk, hit)


@njit(cache=True)
def _refresh_entry(K, k):
    """RefreshSchedule.entry: the k-th refresh of the rotation as (command, rank, flat bank)."""
    ranks = K[K_RANKS]
    if K[K_REF_POLICY] == REF_PER_BANK:
        bg, rest = k % K[K_BG], k // K[K_BG]
        bank, rank = rest % K[K_BPG], rest // K[K_BPG] % ranks
        return REFB, rank, (rank * K[K_BG] + bg) * K[K_BPG] + bank
    rank = k % ranks
    if K[K_REF_POLICY] == REF_SIMULTANEOUS and not K[K_ALL_RANKS]:
        rank = 0
    return REF, rank, rank * K[K_BPR]


@njit(cache=True)
def _refresh_due(K, CH, ch):
    """RefreshSchedule.due (no rank is ever in self-refresh here): the queue window grows."""
    CH[ch, S_NEXT_DUE] += K[K_REF_INTERVAL]
    CH[ch, S_RFQ_LEN] += K[K_RANKS] if K[K_ALL_RANKS] else 1


@njit(cache=True)
def _refresh_head(K, CH, ch):
    return _refresh_entry(K, CH[ch, S_RFQ_HEAD])


@njit(cache=True)
def _refresh_step(K, CH, LOGC, ch, clk):
    cmd, rank, bank = _refresh_head(K, CH, ch)
    _begin_refresh(K, CH, ch, cmd, rank, bank)
    if cmd == REF:
        req, target = rank_ready(K, CH, ch, REF, rank, clk)
    else:
        req, target = required(K, CH, ch, REFB, bank, -1), bank
        if clk < earliest(K, CH, ch, bank, req):
            req = -1
    if req < 0:
        return -1
    if req == PRE:
        _log_and_apply(K, CH, LOGC, ch, PRE, rank, target, -1, -1, clk, 0)
        return PRE
    CH[ch, S_RFQ_HEAD] += 1
    CH[ch, S_RFQ_LEN] -= 1
    CH[ch, S_IN_REFRESH], CH[ch, S_SKIP_LO], CH[ch, S_SKIP_HI] = 0, 0, 0
    _log_and_apply(K, CH, LOGC, ch, cmd, rank, bank, -1, -1, clk, 0)
    return cmd


@njit(cache=True)
def _note_power(K, CH, LOGC, ch, clk):
    CH[ch, S_POWER_DIRTY] = 0
    n = CH[ch, S_PWR_LEN]
    changed = False
    for r in range(K[K_RANKS]):
        if (1 if CH[ch, K[O_OPENR] + r] == 0 else 0) != LOGC[ch, n - 1, C_PWR + 1 + r]:
            changed = True
    if changed:
        LOGC[ch, n, C_PWR] = clk
        for r in range(K[K_RANKS]):
            LOGC[ch, n, C_PWR + 1 + r] = 1 if CH[ch, K[O_OPENR] + r] == 0 else 0
        CH[ch, S_PWR_LEN] = n + 1


@njit(cache=True)
def _drain_due(K, CH, ch):
    n = CH[ch, S_WB_LEN]
    return n >= K[K_WBCAP] or (n > K[K_DRAIN] and CH[ch, S_COUNT] == 0)


@njit(cache=True)
def _move_first(K, CH, TR, AD, ch, queue_key, len_key):
    """Move the oldest transaction of a queue (read queue or write buffer) whose command queue has room."""
    n = CH[ch, len_key]
    base = K[queue_key]
    for i in range(n):
        t = CH[ch, base + i]
        rank, bank = TR[t, T_RANK], TR[t, T_BANK]
        q = _queue_of(K, rank, bank)
        slot = CH[ch, K[O_QLEN] + q]
        if slot >= K[K_CQ]:
            continue
        is_write = TR[t, T_WRITE]
        if is_write and not K[K_UNIFIED]:
            if AD[TR[t, T_AID], A_PR_HEAD] >= 0:
                CH[ch, S_WRITE_DRAINING] = 0
                return False
            CH[ch, S_WRITE_DRAINING] -= 1
        f = K[O_Q] + (q * K[K_CQ] + slot) * QF_SIZE
        CH[ch, f + QF_CMD] = K[K_WR_CMD] if is_write else K[K_RD_CMD]
        CH[ch, f + QF_AID], CH[ch, f + QF_RANK], CH[ch, f + QF_BANK] = TR[t, T_AID], rank, bank
        CH[ch, f + QF_ROW], CH[ch, f + QF_COL] = TR[t, T_ROW], TR[t, T_COL]
        CH[ch, K[O_QLEN] + q] = slot + 1
        CH[ch, K[O_BOUND] + q] = 0
        CH[ch, S_COUNT] += 1
        for j in range(base + i, base + n - 1):
            CH[ch, j] = CH[ch, j + 1]
        CH[ch, len_key] = n - 1
        return True
    return False


@njit(cache=True)
def _schedule_transaction(K, CH, TR, AD, ch):
    if not CH[ch, S_DIRTY]:
        return False
    before = CH[ch, S_WRITE_DRAINING]
    unified = K[K_UNIFIED]
    if before == 0 and not unified and _drain_due(K, CH, ch):
        CH[ch, S_WRITE_DRAINING] = CH[ch, S_WB_LEN]
    if unified:
        moved = _move_first(K, CH, TR, AD, ch, O_RQ, S_RQ_LEN)
    elif CH[ch, S_WRITE_DRAINING] > 0:
        moved = _move_first(K, CH, TR, AD, ch, O_WB, S_WB_LEN)
        if not moved and CH[ch, S_WRITE_DRAINING] == 0 and K[K_JEDEC] and _drain_due(K, CH, ch):
            moved = _move_first(K, CH, TR, AD, ch, O_RQ, S_RQ_LEN)
    else:
        moved = _move_first(K, CH, TR, AD, ch, O_RQ, S_RQ_LEN)
    if moved or CH[ch, S_WRITE_DRAINING] != before:
        return True
    CH[ch, S_DIRTY] = 0
    return False


@njit(cache=True)
def _next_event(K, CH, ch, clk):
    best = CH[ch, S_NEXT_DUE]
    if CH[ch, S_RFQ_LEN]:
        cmd, rank, bank = _refresh_head(K, CH, ch)
        if cmd == REF:
            best = min(best, rank_ready_at(K, CH, ch, REF, rank))
        else:
            best = min(best, earliest(K, CH, ch, bank, required(K, CH, ch, REFB, bank, -1)))
    if CH[ch, S_COUNT]:
        best = min(best, _cmdq_ready_at(K, CH, ch))
    return max(best, clk + 1)


@njit(cache=True)
def tick(K, CH, TR, AD, LOGT, LOGC, ch, clk):
    """ChannelController.tick (with skip_idle)."""
    if clk >= CH[ch, S_NEXT_DUE]:
        _refresh_due(K, CH, ch)
    issued = -1
    if CH[ch, S_RFQ_LEN]:
        issued = _refresh_step(K, CH, LOGC, ch, clk)
    if issued < 0:
        req, q, pos = _next_command(K, CH, ch, clk)
        if pos >= 0:
            _issue_found(K, CH, TR, AD, LOGT, LOGC, ch, req, q, pos, clk)
            issued = req
    if issued >= 0:
        if K[K_DUAL]:
            req, q, pos = _next_command(K, CH, ch, clk)
            if pos >= 0 and (req < 4) != (issued < 4):
                _issue_found(K, CH, TR, AD, LOGT, LOGC, ch, req, q, pos, clk)
                n = CH[ch, S_DUAL_LEN]
                LOGC[ch, n, C_DUAL] = clk
                CH[ch, S_DUAL_LEN] = n + 1
        if CH[ch, S_POWER_DIRTY]:
            _note_power(K, CH, LOGC, ch, clk)
    if _schedule_transaction(K, CH, TR, AD, ch):
        CH[ch, S_NEXT_WAKE] = clk + 1
    else:
        CH[ch, S_NEXT_WAKE] = _next_event(K, CH, ch, clk)
