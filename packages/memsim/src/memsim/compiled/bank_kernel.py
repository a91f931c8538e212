"""Compiled bank state and command scheduling: the numba twins of `ChannelState` and `memsim.scheduling`.

Each function does what the Python method of the same name does, on the arrays of
`memsim.compiled.layout` (`K` the configuration, `CH` the channels' rows, `ch` the channel), so that a
compiled run issues the same commands at the same cycles. Rules and their reasons are documented on
the Python side.
"""

# ruff: noqa: SIM109, SIM110  (explicit comparisons and loops: what numba compiles best)

from numba import njit

from memsim.compiled.layout import (
    ACT,
    CLOSED,
    K_BPR,
    K_CQ,
    K_FCFS,
    K_NB,
    K_NW,
    K_PER_BANK,
    K_WCAP,
    N_CMD,
    NEVER,
    O_ACTW,
    O_ACTW_LEN,
    O_BSTATE,
    O_E,
    O_OFF_IDX,
    O_OFF_LAT,
    O_OFF_START,
    O_OPEN_ROW,
    O_OPENR,
    O_Q,
    O_QLEN,
    O_ROW_HITS,
    O_WIN,
    OPEN,
    PRE,
    QF_BANK,
    QF_CMD,
    QF_COL,
    QF_RANK,
    QF_ROW,
    QF_SIZE,
    RD,
    RDA,
    REF,
    ROW_HIT_CAP,
    S_ONDEMAND,
    SRE,
    SREF,
    SRX,
    WR,
    WRA,
)  # fmt: skip


@njit(cache=True)
def qf(K, CH, ch, q, pos, field):
    """Field of the queued command at `pos` of command queue `q`."""
    return CH[ch, K[O_Q] + (q * K[K_CQ] + pos) * QF_SIZE + field]


@njit(cache=True)
def earliest(K, CH, ch, bank, cmd):
    return CH[ch, K[O_E] + bank * N_CMD + cmd]


@njit(cache=True)
def window_ready_at(K, CH, ch, rank):
    ready = 0
    nw, wcap = K[K_NW], K[K_WCAP]
    for w in range(nw):
        if CH[ch, K[O_ACTW_LEN] + rank * nw + w] >= K[K[O_WIN] + 2 * w]:
            x = CH[ch, K[O_ACTW] + (rank * nw + w) * wcap]
            if x > ready:
                ready = x
    return ready


@njit(cache=True)
def required(K, CH, ch, cmd, bank, row):
    """ChannelState.required."""
    st = CH[ch, K[O_BSTATE] + bank]
    if st == OPEN:
        if cmd < 4:
            return cmd if row == CH[ch, K[O_OPEN_ROW] + bank] else PRE
        return PRE
    if st == CLOSED:
        return ACT if cmd < 4 else cmd
    return SRX


@njit(cache=True)
def rank_ready(K, CH, ch, cmd, rank, clk):
    """ChannelState.rank_ready as (command, bank): (-1, -1) for None."""
    bpr = K[K_BPR]
    all_ready = True
    for b in range(rank * bpr, (rank + 1) * bpr):
        if CH[ch, K[O_BSTATE] + b] == OPEN:
            if clk >= earliest(K, CH, ch, b, PRE):
                return PRE, b
            all_ready = False
        elif clk < earliest(K, CH, ch, b, cmd):
            all_ready = False
    if all_ready:
        return cmd, -1
    return -1, -1


@njit(cache=True)
def rank_ready_at(K, CH, ch, cmd, rank):
    bpr = K[K_BPR]
    best = NEVER
    any_open = False
    for b in range(rank * bpr, (rank + 1) * bpr):
        if CH[ch, K[O_BSTATE] + b] == OPEN:
            any_open = True
            best = min(best, earliest(K, CH, ch, b, PRE))
    if any_open:
        return best
    worst = 0
    for b in range(rank * bpr, (rank + 1) * bpr):
        worst = max(worst, earliest(K, CH, ch, b, cmd))
    return worst


@njit(cache=True)
def _update_bank_state(K, CH, ch, cmd, bank, row):
    st = CH[ch, K[O_BSTATE] + bank]
    rank = bank // K[K_BPR]
    if st == OPEN:
        if cmd == RD or cmd == WR:
            CH[ch, K[O_ROW_HITS] + bank] += 1
        elif cmd == RDA or cmd == WRA or cmd == PRE:
            CH[ch, K[O_BSTATE] + bank] = CLOSED
            CH[ch, K[O_OPEN_ROW] + bank] = -1
            CH[ch, K[O_ROW_HITS] + bank] = 0
            CH[ch, K[O_OPENR] + rank] -= 1
    elif st == CLOSED:
        if cmd == ACT:
            CH[ch, K[O_BSTATE] + bank] = OPEN
            CH[ch, K[O_OPEN_ROW] + bank] = row
            CH[ch, K[O_OPENR] + rank] += 1
        elif cmd == SRE:
            CH[ch, K[O_BSTATE] + bank] = SREF
    elif cmd == SRX:
        CH[ch, K[O_BSTATE] + bank] = CLOSED


@njit(cache=True)
def state_issue(K, CH, ch, cmd, bank, row, rank, clk):
    """ChannelState.issue: bank state, activation windows, then the sparse offset maximum."""
    if cmd == REF or cmd == SRE or cmd == SRX:
        bpr = K[K_BPR]
        for b in range(rank * bpr, (rank + 1) * bpr):
            _update_bank_state(K, CH, ch, cmd, b, row)
    else:
        _update_bank_state(K, CH, ch, cmd, bank, row)
    if cmd == ACT:
        nw, wcap = K[K_NW], K[K_WCAP]
        for w in range(nw):
            at_len = K[O_ACTW_LEN] + rank * nw + w
            base = K[O_ACTW] + (rank * nw + w) * wcap
            n = CH[ch, at_len]
            if n > 0 and clk >= CH[ch, base]:
                for i in range(n - 1):
                    CH[ch, base + i] = CH[ch, base + i + 1]
                n -= 1
            CH[ch, base + n] = clk + K[K[O_WIN] + 2 * w + 1]
            CH[ch, at_len] = n + 1
    row_id = cmd * K[K_NB] + bank
    e0, idx0, lat0 = K[O_E], K[O_OFF_IDX], K[O_OFF_LAT]
    for j in range(K[K[O_OFF_START] + row_id], K[K[O_OFF_START] + row_id + 1]):
        k = e0 + K[idx0 + j]
        v = clk + K[lat0 + j]
        if v > CH[ch, k]:
            CH[ch, k] = v


# ---- scheduling (memsim.scheduling)
@njit(cache=True)
def _queued_required(K, CH, ch, q, pos):
    bank = qf(K, CH, ch, q, pos, QF_BANK)
    st = CH[ch, K[O_BSTATE] + bank]
    if st == OPEN:
        return qf(K, CH, ch, q, pos, QF_CMD) if qf(K, CH, ch, q, pos, QF_ROW) == CH[ch, K[O_OPEN_ROW] + bank] else PRE
    return ACT if st == CLOSED else SRX


@njit(cache=True)
def precharge_allowed(K, CH, ch, q, pos):
    bank = qf(K, CH, ch, q, pos, QF_BANK)
    for p in range(pos):
        if qf(K, CH, ch, q, p, QF_BANK) == bank:
            return False
    open_row = CH[ch, K[O_OPEN_ROW] + bank]
    for p in range(pos, CH[ch, K[O_QLEN] + q]):
        if qf(K, CH, ch, q, p, QF_ROW) == open_row and qf(K, CH, ch, q, p, QF_BANK) == bank:
            return CH[ch, K[O_ROW_HITS] + bank] >= ROW_HIT_CAP
    return True


@njit(cache=True)
def write_after_read(K, CH, ch, q, pos):
    row, col, bank = qf(K, CH, ch, q, pos, QF_ROW), qf(K, CH, ch, q, pos, QF_COL), qf(K, CH, ch, q, pos, QF_BANK)
    for p in range(pos):
        c = qf(K, CH, ch, q, p, QF_CMD)
        if (c == RD or c == RDA) and qf(K, CH, ch, q, p, QF_ROW) == row and qf(K, CH, ch, q, p, QF_COL) == col \
                and qf(K, CH, ch, q, p, QF_BANK) == bank:  # fmt: skip
            return True
    return False


@njit(cache=True)
def _candidates(K, CH, ch, q):
    n = CH[ch, K[O_QLEN] + q]
    return min(n, 1) if K[K_FCFS] else n


@njit(cache=True)
def _first_ready_general(K, CH, ch, q, clk):
    for p in range(_candidates(K, CH, ch, q)):
        req = _queued_required(K, CH, ch, q, p)
        if clk < earliest(K, CH, ch, qf(K, CH, ch, q, p, QF_BANK), req):
            continue
        if req == ACT:
            if clk < window_ready_at(K, CH, ch, qf(K, CH, ch, q, p, QF_RANK)):
                continue
        elif req == PRE:
            if not precharge_allowed(K, CH, ch, q, p):
                continue
            CH[ch, S_ONDEMAND] += 1
        elif (req == WR or req == WRA) and write_after_read(K, CH, ch, q, p):
            continue
        return req, p
    return -1, -1


@njit(cache=True)
def _ready_at_general(K, CH, ch, q):
    best = NEVER
    for p in range(_candidates(K, CH, ch, q)):
        req = _queued_required(K, CH, ch, q, p)
        at = earliest(K, CH, ch, qf(K, CH, ch, q, p, QF_BANK), req)
        if req == ACT:
            at = max(at, window_ready_at(K, CH, ch, qf(K, CH, ch, q, p, QF_RANK)))
        elif req == PRE:
            if not precharge_allowed(K, CH, ch, q, p):
                continue
        elif (req == WR or req == WRA) and write_after_read(K, CH, ch, q, p):
            continue
        best = min(best, at)
    return best


@njit(cache=True)
def _no_pending_hit(K, CH, ch, q, open_row):
    for p in range(CH[ch, K[O_QLEN] + q]):
        if qf(K, CH, ch, q, p, QF_ROW) == open_row:
            return False
    return True


@njit(cache=True)
def first_ready(K, CH, ch, q, clk):
    """FrFcfsScheduler.first_ready (one-bank fast path on per-bank FR-FCFS queues) as (command, position)."""
    if K[K_FCFS] or not K[K_PER_BANK]:
        return _first_ready_general(K, CH, ch, q, clk)
    bank = qf(K, CH, ch, q, 0, QF_BANK)
    st = CH[ch, K[O_BSTATE] + bank]
    if st == CLOSED:
        if clk >= earliest(K, CH, ch, bank, ACT) and clk >= window_ready_at(K, CH, ch, qf(K, CH, ch, q, 0, QF_RANK)):
            return ACT, 0
        return -1, -1
    if st != OPEN:
        return _first_ready_general(K, CH, ch, q, clk)
    open_row = CH[ch, K[O_OPEN_ROW] + bank]
    if (
        qf(K, CH, ch, q, 0, QF_ROW) != open_row
        and clk >= earliest(K, CH, ch, bank, PRE)
        and (CH[ch, K[O_ROW_HITS] + bank] >= ROW_HIT_CAP or _no_pending_hit(K, CH, ch, q, open_row))
    ):
        CH[ch, S_ONDEMAND] += 1
        return PRE, 0
    for p in range(CH[ch, K[O_QLEN] + q]):
        c = qf(K, CH, ch, q, p, QF_CMD)
        if qf(K, CH, ch, q, p, QF_ROW) == open_row and clk >= earliest(K, CH, ch, bank, c):
            if (c == WR or c == WRA) and write_after_read(K, CH, ch, q, p):
                continue
            return c, p
    return -1, -1


@njit(cache=True)
def ready_at(K, CH, ch, q):
    """FrFcfsScheduler.ready_at; NEVER for a blocked queue."""
    if K[K_FCFS] or not K[K_PER_BANK]:
        return _ready_at_general(K, CH, ch, q)
    bank = qf(K, CH, ch, q, 0, QF_BANK)
    st = CH[ch, K[O_BSTATE] + bank]
    if st == CLOSED:
        return max(earliest(K, CH, ch, bank, ACT), window_ready_at(K, CH, ch, qf(K, CH, ch, q, 0, QF_RANK)))
    if st != OPEN:
        return _ready_at_general(K, CH, ch, q)
    open_row = CH[ch, K[O_OPEN_ROW] + bank]
    best = NEVER
    if qf(K, CH, ch, q, 0, QF_ROW) != open_row and (
        CH[ch, K[O_ROW_HITS] + bank] >= ROW_HIT_CAP or _no_pending_hit(K, CH, ch, q, open_row)
    ):
        best = earliest(K, CH, ch, bank, PRE)
    for p in range(CH[ch, K[O_QLEN] + q]):
        if qf(K, CH, ch, q, p, QF_ROW) == open_row:
            c = qf(K, CH, ch, q, p, QF_CMD)
            if (c == WR or c == WRA) and write_after_read(K, CH, ch, q, p):
                continue
            best = min(best, earliest(K, CH, ch, bank, c))
    return best
