// memsim's bank state and command scheduling in C++: the twins of ChannelState and memsim.scheduling,
// members of Controller (memsim_engine.h).
#include <algorithm>

#include "memsim_engine.h"
#include "memsim_layout.h"

namespace memsim {

// ---- bank state and scheduling
i64 Controller::qf(const i64* C, i64 q, i64 pos, int field) const {
    return C[K[O_Q] + (q * K[K_CQ] + pos) * QF_SIZE + field];
}

i64 Controller::earliest(const i64* C, i64 bank, i64 cmd) const { return C[K[O_E] + bank * N_CMD + cmd]; }

i64 Controller::window_ready_at(const i64* C, i64 rank) const {
    i64 ready = 0, nw = K[K_NW], wcap = K[K_WCAP];
    for (i64 w = 0; w < nw; w++) {
        if (C[K[O_ACTW_LEN] + rank * nw + w] >= K[K[O_WIN] + 2 * w]) {
            i64 x = C[K[O_ACTW] + (rank * nw + w) * wcap];
            if (x > ready) ready = x;
        }
    }
    return ready;
}

i64 Controller::required(const i64* C, i64 cmd, i64 bank, i64 row) const {
    i64 st = C[K[O_BSTATE] + bank];
    if (st == OPEN) {
        if (cmd < 4) return row == C[K[O_OPEN_ROW] + bank] ? cmd : PRE;
        return PRE;
    }
    if (st == CLOSED) return cmd < 4 ? ACT : cmd;
    return SRX;
}

void Controller::rank_ready(const i64* C, i64 cmd, i64 rank, i64 clk, i64& req, i64& bank) const {
    i64 bpr = K[K_BPR];
    bool all_ready = true;
    for (i64 b = rank * bpr; b < (rank + 1) * bpr; b++) {
        if (C[K[O_BSTATE] + b] == OPEN) {
            if (clk >= earliest(C, b, PRE)) {
                req = PRE;
                bank = b;
                return;
            }
            all_ready = false;
        } else if (clk < earliest(C, b, cmd)) {
            all_ready = false;
        }
    }
    req = all_ready ? cmd : -1;
    bank = -1;
}

i64 Controller::rank_ready_at(const i64* C, i64 cmd, i64 rank) const {
    i64 bpr = K[K_BPR], best = NEVER;
    bool any_open = false;
    for (i64 b = rank * bpr; b < (rank + 1) * bpr; b++)
        if (C[K[O_BSTATE] + b] == OPEN) {
            any_open = true;
            best = std::min(best, earliest(C, b, PRE));
        }
    if (any_open) return best;
    i64 worst = 0;
    for (i64 b = rank * bpr; b < (rank + 1) * bpr; b++) worst = std::max(worst, earliest(C, b, cmd));
    return worst;
}

void Controller::update_bank_state(i64* C, i64 cmd, i64 bank, i64 row) {
    i64 st = C[K[O_BSTATE] + bank];
    i64 rank = bank / K[K_BPR];
    if (st == OPEN) {
        if (cmd == RD || cmd == WR) {
            C[K[O_ROW_HITS] + bank] += 1;
        } else if (cmd == RDA || cmd == WRA || cmd == PRE) {
            C[K[O_BSTATE] + bank] = CLOSED;
            C[K[O_OPEN_ROW] + bank] = -1;
            C[K[O_ROW_HITS] + bank] = 0;
            C[K[O_OPENR] + rank] -= 1;
        }
    } else if (st == CLOSED) {
        if (cmd == ACT) {
            C[K[O_BSTATE] + bank] = OPEN;
            C[K[O_OPEN_ROW] + bank] = row;
            C[K[O_OPENR] + rank] += 1;
        } else if (cmd == SRE) {
            C[K[O_BSTATE] + bank] = SREF;
        }
    } else if (cmd == SRX) {
        C[K[O_BSTATE] + bank] = CLOSED;
    }
}

void Controller::state_issue(i64* C, i64 cmd, i64 bank, i64 row, i64 rank, i64 clk) {
    if (cmd == REF || cmd == SRE || cmd == SRX) {
        i64 bpr = K[K_BPR];
        for (i64 b = rank * bpr; b < (rank + 1) * bpr; b++) update_bank_state(C, cmd, b, row);
    } else {
        update_bank_state(C, cmd, bank, row);
    }
    if (cmd == ACT) {
        i64 nw = K[K_NW], wcap = K[K_WCAP];
        for (i64 w = 0; w < nw; w++) {
            i64 at_len = K[O_ACTW_LEN] + rank * nw + w;
            i64 base = K[O_ACTW] + (rank * nw + w) * wcap;
            i64 n = C[at_len];
            if (n > 0 && clk >= C[base]) {
                for (i64 i = 0; i < n - 1; i++) C[base + i] = C[base + i + 1];
                n -= 1;
            }
            C[base + n] = clk + K[K[O_WIN] + 2 * w + 1];
            C[at_len] = n + 1;
        }
    }
    i64 row_id = cmd * K[K_NB] + bank;
    i64 e0 = K[O_E], idx0 = K[O_OFF_IDX], lat0 = K[O_OFF_LAT];
    for (i64 j = K[K[O_OFF_START] + row_id]; j < K[K[O_OFF_START] + row_id + 1]; j++) {
        i64 k = e0 + K[idx0 + j];
        i64 v = clk + K[lat0 + j];
        if (v > C[k]) C[k] = v;
    }
}

i64 Controller::queued_required(const i64* C, i64 q, i64 pos) const {
    i64 bank = qf(C, q, pos, QF_BANK);
    i64 st = C[K[O_BSTATE] + bank];
    if (st == OPEN) return qf(C, q, pos, QF_ROW) == C[K[O_OPEN_ROW] + bank] ? qf(C, q, pos, QF_CMD) : PRE;
    return st == CLOSED ? ACT : SRX;
}

bool Controller::precharge_allowed(const i64* C, i64 q, i64 pos) const {
    i64 bank = qf(C, q, pos, QF_BANK);
    for (i64 p = 0; p < pos; p++)
        if (qf(C, q, p, QF_BANK) == bank) return false;
    i64 open_row = C[K[O_OPEN_ROW] + bank];
    for (i64 p = pos; p < C[K[O_QLEN] + q]; p++)
        if (qf(C, q, p, QF_ROW) == open_row && qf(C, q, p, QF_BANK) == bank)
            return C[K[O_ROW_HITS] + bank] >= ROW_HIT_CAP;
    return true;
}

bool Controller::write_after_read(const i64* C, i64 q, i64 pos) const {
    i64 row = qf(C, q, pos, QF_ROW), col = qf(C, q, pos, QF_COL), bank = qf(C, q, pos, QF_BANK);
    for (i64 p = 0; p < pos; p++) {
        i64 c = qf(C, q, p, QF_CMD);
        if ((c == RD || c == RDA) && qf(C, q, p, QF_ROW) == row && qf(C, q, p, QF_COL) == col &&
            qf(C, q, p, QF_BANK) == bank)
            return true;
    }
    return false;
}

i64 Controller::candidates(const i64* C, i64 q) const {
    i64 n = C[K[O_QLEN] + q];
    return K[K_FCFS] ? std::min<i64>(n, 1) : n;
}

void Controller::first_ready_general(i64* C, i64 q, i64 clk, i64& req_out, i64& pos_out) {
    for (i64 p = 0; p < candidates(C, q); p++) {
        i64 req = queued_required(C, q, p);
        if (clk < earliest(C, qf(C, q, p, QF_BANK), req)) continue;
        if (req == ACT) {
            if (clk < window_ready_at(C, qf(C, q, p, QF_RANK))) continue;
        } else if (req == PRE) {
            if (!precharge_allowed(C, q, p)) continue;
            C[S_ONDEMAND] += 1;
        } else if ((req == WR || req == WRA) && write_after_read(C, q, p)) {
            continue;
        }
        req_out = req;
        pos_out = p;
        return;
    }
    req_out = pos_out = -1;
}

i64 Controller::ready_at_general(const i64* C, i64 q) const {
    i64 best = NEVER;
    for (i64 p = 0; p < candidates(C, q); p++) {
        i64 req = queued_required(C, q, p);
        i64 at = earliest(C, qf(C, q, p, QF_BANK), req);
        if (req == ACT) {
            at = std::max(at, window_ready_at(C, qf(C, q, p, QF_RANK)));
        } else if (req == PRE) {
            if (!precharge_allowed(C, q, p)) continue;
        } else if ((req == WR || req == WRA) && write_after_read(C, q, p)) {
            continue;
        }
        best = std::min(best, at);
    }
    return best;
}

bool Controller::no_pending_hit(const i64* C, i64 q, i64 open_row) const {
    for (i64 p = 0; p < C[K[O_QLEN] + q]; p++)
        if (qf(C, q, p, QF_ROW) == open_row) return false;
    return true;
}

void Controller::first_ready(i64* C, i64 q, i64 clk, i64& req, i64& pos) {
    if (K[K_FCFS] || !K[K_PER_BANK]) return first_ready_general(C, q, clk, req, pos);
    i64 bank = qf(C, q, 0, QF_BANK);
    i64 st = C[K[O_BSTATE] + bank];
    req = pos = -1;
    if (st == CLOSED) {
        if (clk >= earliest(C, bank, ACT) && clk >= window_ready_at(C, qf(C, q, 0, QF_RANK))) req = ACT, pos = 0;
        return;
    }
    if (st != OPEN) return first_ready_general(C, q, clk, req, pos);
    i64 open_row = C[K[O_OPEN_ROW] + bank];
    if (qf(C, q, 0, QF_ROW) != open_row && clk >= earliest(C, bank, PRE) &&
        (C[K[O_ROW_HITS] + bank] >= ROW_HIT_CAP || no_pending_hit(C, q, open_row))) {
        C[S_ONDEMAND] += 1;
        req = PRE;
        pos = 0;
        return;
    }
    for (i64 p = 0; p < C[K[O_QLEN] + q]; p++) {
        i64 c = qf(C, q, p, QF_CMD);
        if (qf(C, q, p, QF_ROW) == open_row && clk >= earliest(C, bank, c)) {
            if ((c == WR || c == WRA) && write_after_read(C, q, p)) continue;
            req = c;
            pos = p;
            return;
        }
    }
}

i64 Controller::ready_at(const i64* C, i64 q) const {
    if (K[K_FCFS] || !K[K_PER_BANK]) return ready_at_general(C, q);
    i64 bank = qf(C, q, 0, QF_BANK);
    i64 st = C[K[O_BSTATE] + bank];
    if (st == CLOSED) return std::max(earliest(C, bank, ACT), window_ready_at(C, qf(C, q, 0, QF_RANK)));
    if (st != OPEN) return ready_at_general(C, q);
    i64 open_row = C[K[O_OPEN_ROW] + bank];
    i64 best = NEVER;
    if (qf(C, q, 0, QF_ROW) != open_row &&
        (C[K[O_ROW_HITS] + bank] >= ROW_HIT_CAP || no_pending_hit(C, q, open_row)))
        best = earliest(C, bank, PRE);
    for (i64 p = 0; p < C[K[O_QLEN] + q]; p++) {
        if (qf(C, q, p, QF_ROW) == open_row) {
            i64 c = qf(C, q, p, QF_CMD);
            if ((c == WR || c == WRA) && write_after_read(C, q, p)) continue;
            best = std::min(best, earliest(C, bank, c));
        }
    }
    return best;
}

}  // namespace memsim
