"""The compiled trace frontend: numba twin of `TraceFrontend.run` and of `ChannelController.add`.

`run_loop` simulates from cycle `c` until `stop` and returns the cycle it reached and a status: 0 done,
1 the command log needs more room (the bridge grows it and calls again; the state is complete at every
cycle boundary, so the run resumes exactly).
"""

from numba import njit

from memsim.compiled.kernel import _complete, tick
from memsim.compiled.layout import (
    A_PR_HEAD,
    A_PR_TAIL,
    A_PW,
    G_INDEX,
    G_N,
    G_ONE_SHOT,
    K_NCH,
    K_TQ,
    K_UNIFIED,
    K_WBCAP,
    L_IA,
    NEVER,
    O_RQ,
    O_WB,
    S_CMD_LEN,
    S_DIRTY,
    S_DUAL_LEN,
    S_IA_LEN,
    S_LAST_ARRIVAL,
    S_NEXT_WAKE,
    S_PWR_LEN,
    S_RQ_LEN,
    S_WB_LEN,
    T_ADDED,
    T_AID,
    T_CH,
    T_CYCLE,
    T_NEXT,
    T_WRITE,
)  # fmt: skip


@njit(cache=True)
def _append(K, CH, ch, queue_key, len_key, t):
    n = CH[ch, len_key]
    CH[ch, K[queue_key] + n] = t
    CH[ch, len_key] = n + 1


@njit(cache=True)
def add(K, CH, TR, AD, LOGT, ch, t, clk):
    """ChannelController.add for trace entry `t`."""
    TR[t, T_ADDED] = clk
    n = CH[ch, S_IA_LEN]
    LOGT[ch, n, L_IA] = clk - CH[ch, S_LAST_ARRIVAL]
    CH[ch, S_IA_LEN] = n + 1
    CH[ch, S_LAST_ARRIVAL] = clk
    CH[ch, S_NEXT_WAKE] = min(CH[ch, S_NEXT_WAKE], clk)
    CH[ch, S_DIRTY] = 1
    aid = TR[t, T_AID]
    if TR[t, T_WRITE]:
        if AD[aid, A_PW] < 0:
            AD[aid, A_PW] = t
            if K[K_UNIFIED]:
                _append(K, CH, ch, O_RQ, S_RQ_LEN, t)
            else:
                _append(K, CH, ch, O_WB, S_WB_LEN, t)
        _complete(CH, TR, LOGT, ch, t, clk + 1)
        return
    if AD[aid, A_PW] >= 0:
        _complete(CH, TR, LOGT, ch, t, clk + 1)  # forwarded from the write buffer
        return
    TR[t, T_NEXT] = -1
    if AD[aid, A_PR_HEAD] < 0:
        AD[aid, A_PR_HEAD] = t
        AD[aid, A_PR_TAIL] = t
        _append(K, CH, ch, O_RQ, S_RQ_LEN, t)
    else:
        TR[AD[aid, A_PR_TAIL], T_NEXT] = t
        AD[aid, A_PR_TAIL] = t


@njit(cache=True)
def _offer(K, CH, TR, AD, LOGT, G, c):
    i, n = G[G_INDEX], G[G_N]
    if i >= n:
        return NEVER
    if TR[i, T_CYCLE] > c:
        return TR[i, T_CYCLE]
    ch = TR[i, T_CH]
    is_write = TR[i, T_WRITE]
    room = CH[ch, S_WB_LEN] < K[K_WBCAP] if is_write and not K[K_UNIFIED] else CH[ch, S_RQ_LEN] < K[K_TQ]
    if room:
        add(K, CH, TR, AD, LOGT, ch, i, c + 1)
        j = i + 1
        G[G_INDEX] = j
        if j >= n:
            return NEVER
        if j == G[G_ONE_SHOT] and TR[j, T_CYCLE] > c + 1:
            G[G_INDEX] = n
            return NEVER
        return max(c + 1, TR[j, T_CYCLE])
    if i == G[G_ONE_SHOT]:
        G[G_INDEX] = n
        return NEVER
    return CH[ch, S_NEXT_WAKE]


@njit(cache=True)
def run_loop(K, CH, TR, AD, LOGT, LOGC, G, c, stop):
    """TraceFrontend.run from cycle c to `stop`: (cycle reached, status)."""
    nch = K[K_NCH]
    cap = LOGC.shape[1]
    while c < stop:
        for ch in range(nch):
            if CH[ch, S_CMD_LEN] + 2 > cap or CH[ch, S_DUAL_LEN] + 1 > cap or CH[ch, S_PWR_LEN] + 1 > cap:
                return c, 1
        for ch in range(nch):
            if CH[ch, S_NEXT_WAKE] <= c:
                tick(K, CH, TR, AD, LOGT, LOGC, ch, c)
        nxt = _offer(K, CH, TR, AD, LOGT, G, c)
        for ch in range(nch):
            nxt = min(nxt, CH[ch, S_NEXT_WAKE])
        c = max(nxt, c + 1)
    return c, 0
