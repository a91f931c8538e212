// memsim's controller in C++ (see memsim_engine.h): command queues (memsim.command_queue), the controller
// (memsim.controller), the trace frontend (memsim.trace.TraceFrontend) and requests one by one (Engine).
// memsim_layout.h is generated from memsim/compiled/layout.py when the library is built, so the array layout
// has one home.
#include "memsim_engine.h"

#include <algorithm>

namespace memsim {

void Controller::attach(const TraceArrays& a) {
    a_ = a;
    K = a.K;
}

// ---- command queues (CommandQueues)
i64 Controller::queue_of(i64 rank, i64 bank) const { return K[K_PER_BANK] ? bank : rank; }

void Controller::remove(i64* C, i64 q, i64 pos) {
    i64 n = C[K[O_QLEN] + q];
    i64 base = K[O_Q] + q * K[K_CQ] * QF_SIZE;
    for (i64 i = base + pos * QF_SIZE; i < base + (n - 1) * QF_SIZE; i++) C[i] = C[i + QF_SIZE];
    C[K[O_QLEN] + q] = n - 1;
    C[K[O_BOUND] + q] = 0;
    C[S_COUNT] -= 1;
    C[S_DIRTY] = 1;
}

// CommandQueues.next_command without taking: (command, queue, position), position -1 for none.
void Controller::next_command(i64* C, i64 clk, i64& req, i64& q_out, i64& pos) {
    i64 nq = K[K_NQ], b0 = K[O_BOUND];
    req = q_out = pos = -1;
    i64 lowest = NEVER;
    for (i64 i = 0; i < nq; i++) lowest = std::min(lowest, C[b0 + i]);
    if (lowest > clk) return;
    i64 in_refresh = C[S_IN_REFRESH], lo = C[S_SKIP_LO], hi = C[S_SKIP_HI];
    i64 idx = C[S_QUEUE_IDX];
    for (i64 n = 0; n < nq; n++) {
        idx += 1;
        if (idx == nq) idx = 0;
        if (C[b0 + idx] > clk || (in_refresh && lo <= idx && idx < hi)) continue;
        if (C[K[O_QLEN] + idx] == 0) {
            C[b0 + idx] = NEVER;
            continue;
        }
        i64 r, p;
        first_ready(C, idx, clk, r, p);
        if (p < 0) {
            C[b0 + idx] = ready_at(C, idx);
            continue;
        }
        C[S_QUEUE_IDX] = idx;
        req = r;
        q_out = idx;
        pos = p;
        return;
    }
}

i64 Controller::cmdq_ready_at(const i64* C) const {
    i64 best = NEVER, in_refresh = C[S_IN_REFRESH], lo = C[S_SKIP_LO], hi = C[S_SKIP_HI];
    for (i64 i = 0; i < K[K_NQ]; i++)
        if (!(in_refresh && lo <= i && i < hi)) best = std::min(best, C[K[O_BOUND] + i]);
    return best;
}

void Controller::begin_refresh(i64* C, i64 cmd, i64 rank, i64 bank) {
    if (C[S_IN_REFRESH]) return;
    C[S_IN_REFRESH] = 1;
    i64 lo, hi;
    if (cmd == REF && K[K_PER_BANK]) {
        lo = rank * K[K_BPR];
        hi = (rank + 1) * K[K_BPR];
    } else if (cmd == REF) {
        lo = rank;
        hi = rank + 1;
    } else {
        lo = queue_of(rank, bank);
        hi = lo + 1;
    }
    C[S_SKIP_LO] = lo;
    C[S_SKIP_HI] = hi;
}

// ---- controller (ChannelController)
void Controller::complete(i64 ch, i64 t, i64 cycle) {
    tr(t, T_COMPLETE) = cycle;
    if (!trace_logs_) {
        completed_.push_back(t);
        return;
    }
    i64* C = ch_row(ch);
    i64 n = C[S_COMP_LEN];
    i64* L = a_.LOGT + (ch * a_.logt_rows + n) * 5;
    L[L_COMP_CYCLE] = cycle;
    L[L_COMP_LAT] = cycle - tr(t, T_ADDED);
    L[L_COMP_WRITE] = tr(t, T_WRITE);
    C[S_COMP_LEN] = n + 1;
}

void Controller::log_and_apply(i64 ch, i64 cmd, i64 rank, i64 bank, i64 row, i64 col, i64 clk, i64 hit) {
    i64* C = ch_row(ch);
    if (trace_logs_) {
        i64 n = C[S_CMD_LEN];
        i64* L = a_.LOGC + (ch * a_.logc_rows + n) * a_.logc_width;
        L[C_CYCLE] = clk;
        L[C_CMD] = cmd;
        L[C_RANK] = rank;
        L[C_BANK] = bank;
        L[C_ROW] = row;
        L[C_COL] = col;
        L[C_HIT] = hit;
        C[S_CMD_LEN] = n + 1;
    } else if (log_commands_) {
        i64 entry[8] = {clk, ch, cmd, rank, bank, row, col, hit};
        command_log_.insert(command_log_.end(), entry, entry + 8);
    }
    state_issue(C, cmd, bank, row, rank, clk);
    if (cmd != RD && cmd != WR) C[S_POWER_DIRTY] = 1;
    if (cmd == REF) {
        i64 bpr = K[K_BPR];
        for (i64 b = rank * bpr; b < (rank + 1) * bpr; b++) C[K[O_BOUND] + queue_of(rank, b)] = 0;
    } else {
        C[K[O_BOUND] + queue_of(rank, bank)] = 0;
    }
}

// Take a found command off its queue (column commands only) and issue it (ChannelController._issue).
void Controller::issue_found(i64 ch, i64 req, i64 q, i64 pos, i64 clk) {
    i64* C = ch_row(ch);
    i64 aid = qf(C, q, pos, QF_AID), rank = qf(C, q, pos, QF_RANK), bank = qf(C, q, pos, QF_BANK);
    i64 row = qf(C, q, pos, QF_ROW), col = qf(C, q, pos, QF_COL);
    if (req < 4) remove(C, q, pos);
    if (req == RD || req == RDA) {
        i64 t = ad(aid, A_PR_HEAD);
        ad(aid, A_PR_HEAD) = -1;
        while (t >= 0) {
            complete(ch, t, clk + K[K_READ_DELAY]);
            i64 next = tr(t, T_NEXT);
            if (!trace_logs_) retired_.push_back(t);
            t = next;
        }
    } else if (req == WR || req == WRA) {
        i64 t = ad(aid, A_PW);
        ad(aid, A_PW) = -1;
        if (trace_logs_) {
            i64 n = C[S_WL_LEN];
            a_.LOGT[(ch * a_.logt_rows + n) * 5 + L_WL] = clk - tr(t, T_ADDED) + K[K_WRITE_DELAY];
            C[S_WL_LEN] = n + 1;
        } else {
            retired_.push_back(t);
        }
    }
    i64 hit = (req < 4 && C[K[O_ROW_HITS] + bank] != 0) ? 1 : 0;
    log_and_apply(ch, req, rank, bank, row, col, clk, hit);
}

// The k-th refresh of the rotation (RefreshSchedule.entry): pending refreshes are a window (head, length) of
// the rotation, so a queue that grows without bound (DRAMSim3's per-bank refresh) needs no storage.
void Controller::refresh_entry(i64 k, i64& cmd, i64& rank, i64& bank) const {
    i64 ranks = K[K_RANKS];
    if (K[K_REF_POLICY] == REF_PER_BANK) {
        i64 bg = k % K[K_BG], rest = k / K[K_BG];
        i64 b = rest % K[K_BPG];
        rank = rest / K[K_BPG] % ranks;
        cmd = REFB;
        bank = (rank * K[K_BG] + bg) * K[K_BPG] + b;
        return;
    }
    rank = (K[K_REF_POLICY] == REF_SIMULTANEOUS && !K[K_ALL_RANKS]) ? 0 : k % ranks;
    cmd = REF;
    bank = rank * K[K_BPR];
}

// RefreshSchedule.due (no rank is ever in self-refresh here): every rank at once for jedec-mode simultaneous
// refresh, else one more of the rotation (DRAMSim3's simultaneous refresh queues the first rank only).
void Controller::refresh_due(i64* C) {
    C[S_NEXT_DUE] += K[K_REF_INTERVAL];
    C[S_RFQ_LEN] += K[K_ALL_RANKS] ? K[K_RANKS] : 1;
}

i64 Controller::refresh_step(i64 ch, i64 clk) {
    i64* C = ch_row(ch);
    i64 cmd, rank, bank;
    refresh_entry(C[S_RFQ_HEAD], cmd, rank, bank);
    begin_refresh(C, cmd, rank, bank);
    i64 req, target;
    if (cmd == REF) {
        rank_ready(C, REF, rank, clk, req, target);
    } else {
        req = required(C, REFB, bank, -1);
        target = bank;
        if (clk < earliest(C, bank, req)) req = -1;
    }
    if (req < 0) return -1;
    if (req == PRE) {
        log_and_apply(ch, PRE, rank, target, -1, -1, clk, 0);
        return PRE;
    }
    C[S_RFQ_HEAD] += 1;
    C[S_RFQ_LEN] -= 1;
    C[S_IN_REFRESH] = C[S_SKIP_LO] = C[S_SKIP_HI] = 0;
    log_and_apply(ch, cmd, rank, bank, -1, -1, clk, 0);
    return cmd;
}

// A new power run (cycle, idle flag per rank) when a rank's idleness changed (the stats' background energy).
void Controller::note_power(i64 ch, i64 clk) {
    i64* C = ch_row(ch);
    C[S_POWER_DIRTY] = 0;
    i64 n = C[S_PWR_LEN], w = a_.logc_width;
    const i64* prev = a_.LOGC + (ch * a_.logc_rows + n - 1) * w;
    bool changed = false;
    for (i64 r = 0; r < K[K_RANKS]; r++)
        if ((C[K[O_OPENR] + r] == 0 ? 1 : 0) != prev[C_PWR + 1 + r]) changed = true;
    if (!changed) return;
    i64* row = a_.LOGC + (ch * a_.logc_rows + n) * w;
    row[C_PWR] = clk;
    for (i64 r = 0; r < K[K_RANKS]; r++) row[C_PWR + 1 + r] = C[K[O_OPENR] + r] == 0 ? 1 : 0;
    C[S_PWR_LEN] = n + 1;
}

bool Controller::drain_due(const i64* C) const {
    i64 n = C[S_WB_LEN];
    return n >= K[K_WBCAP] || (n > K[K_DRAIN] && C[S_COUNT] == 0);
}

// Move the oldest transaction of a queue (read queue or write buffer) whose command queue has room.
bool Controller::move_first(i64* C, i64 queue_key, i64 len_key) {
    i64 n = C[len_key], base = K[queue_key];
    for (i64 i = 0; i < n; i++) {
        i64 t = C[base + i];
        i64 rank = tr(t, T_RANK), bank = tr(t, T_BANK);
        i64 q = queue_of(rank, bank);
        i64 slot = C[K[O_QLEN] + q];
        if (slot >= K[K_CQ]) continue;
        i64 write = tr(t, T_WRITE);
        if (write && !K[K_UNIFIED]) {
            if (ad(tr(t, T_AID), A_PR_HEAD) >= 0) {
                C[S_WRITE_DRAINING] = 0;
                return false;
            }
            C[S_WRITE_DRAINING] -= 1;
        }
        i64 f = K[O_Q] + (q * K[K_CQ] + slot) * QF_SIZE;
        C[f + QF_CMD] = write ? K[K_WR_CMD] : K[K_RD_CMD];
        C[f + QF_AID] = tr(t, T_AID);
        C[f + QF_RANK] = rank;
        C[f + QF_BANK] = bank;
        C[f + QF_ROW] = tr(t, T_ROW);
        C[f + QF_COL] = tr(t, T_COL);
        C[K[O_QLEN] + q] = slot + 1;
        C[K[O_BOUND] + q] = 0;
        C[S_COUNT] += 1;
        for (i64 j = base + i; j < base + n - 1; j++) C[j] = C[j + 1];
        C[len_key] = n - 1;
        return true;
    }
    return false;
}

bool Controller::schedule_transaction(i64* C) {
    if (!C[S_DIRTY]) return false;
    i64 before = C[S_WRITE_DRAINING];
    bool unified = K[K_UNIFIED];
    if (before == 0 && !unified && drain_due(C)) C[S_WRITE_DRAINING] = C[S_WB_LEN];
    bool moved;
    if (unified) {
        moved = move_first(C, O_RQ, S_RQ_LEN);
    } else if (C[S_WRITE_DRAINING] > 0) {
        moved = move_first(C, O_WB, S_WB_LEN);
        // dramsim3 mode keeps DRAMSim3's write-drain livelock; jedec mode moves a read instead
        if (!moved && C[S_WRITE_DRAINING] == 0 && K[K_JEDEC] && drain_due(C)) moved = move_first(C, O_RQ, S_RQ_LEN);
    } else {
        moved = move_first(C, O_RQ, S_RQ_LEN);
    }
    if (moved || C[S_WRITE_DRAINING] != before) return true;
    C[S_DIRTY] = 0;
    return false;
}

i64 Controller::next_event(const i64* C, i64 clk) const {
    i64 best = C[S_NEXT_DUE];
    if (C[S_RFQ_LEN]) {
        i64 cmd, rank, bank;
        refresh_entry(C[S_RFQ_HEAD], cmd, rank, bank);
        if (cmd == REF) best = std::min(best, rank_ready_at(C, REF, rank));
        else best = std::min(best, earliest(C, bank, required(C, REFB, bank, -1)));
    }
    if (C[S_COUNT]) best = std::min(best, cmdq_ready_at(C));
    return std::max(best, clk + 1);
}

// ChannelController.tick (with skip_idle).
void Controller::tick(i64 ch, i64 clk) {
    i64* C = ch_row(ch);
    if (clk >= C[S_NEXT_DUE]) refresh_due(C);
    i64 issued = -1;
    if (C[S_RFQ_LEN]) issued = refresh_step(ch, clk);
    if (issued < 0) {
        i64 req, q, pos;
        next_command(C, clk, req, q, pos);
        if (pos >= 0) {
            issue_found(ch, req, q, pos, clk);
            issued = req;
        }
    }
    if (issued >= 0) {
        if (K[K_DUAL]) {
            i64 req, q, pos;
            next_command(C, clk, req, q, pos);
            if (pos >= 0 && (req < 4) != (issued < 4)) {
                issue_found(ch, req, q, pos, clk);
                if (trace_logs_) {
                    i64 n = C[S_DUAL_LEN];
                    a_.LOGC[(ch * a_.logc_rows + n) * a_.logc_width + C_DUAL] = clk;
                    C[S_DUAL_LEN] = n + 1;
                }
            }
        }
        if (!trace_logs_) C[S_POWER_DIRTY] = 0;  // requests one by one keep no power runs
        else if (C[S_POWER_DIRTY]) note_power(ch, clk);
    }
    if (schedule_transaction(C)) C[S_NEXT_WAKE] = clk + 1;
    else C[S_NEXT_WAKE] = next_event(C, clk);
}

// ---- frontend (ChannelController.add, TraceFrontend)
void Controller::append(i64* C, i64 queue_key, i64 len_key, i64 t) {
    C[K[queue_key] + C[len_key]] = t;
    C[len_key] += 1;
}

// ChannelController.add for transaction row `t` (a write completes at clk + 1; a read of a buffered write's
// address is forwarded; a read of a pending read's address merges with it).
void Controller::add(i64 ch, i64 t, i64 clk) {
    i64* C = ch_row(ch);
    tr(t, T_ADDED) = clk;
    if (trace_logs_) {
        i64 n = C[S_IA_LEN];
        a_.LOGT[(ch * a_.logt_rows + n) * 5 + L_IA] = clk - C[S_LAST_ARRIVAL];
        C[S_IA_LEN] = n + 1;
    }
    C[S_LAST_ARRIVAL] = clk;
    C[S_NEXT_WAKE] = std::min(C[S_NEXT_WAKE], clk);
    C[S_DIRTY] = 1;
    i64 aid = tr(t, T_AID);
    if (tr(t, T_WRITE)) {
        if (ad(aid, A_PW) < 0) {
            ad(aid, A_PW) = t;
            if (K[K_UNIFIED]) append(C, O_RQ, S_RQ_LEN, t);
            else append(C, O_WB, S_WB_LEN, t);
        } else if (!trace_logs_) {
            retired_.push_back(t);  // merged into the buffered write
        }
        complete(ch, t, clk + 1);
        return;
    }
    if (ad(aid, A_PW) >= 0) {
        complete(ch, t, clk + 1);  // forwarded from the write buffer
        if (!trace_logs_) retired_.push_back(t);
        return;
    }
    tr(t, T_NEXT) = -1;
    if (ad(aid, A_PR_HEAD) < 0) {
        ad(aid, A_PR_HEAD) = t;
        ad(aid, A_PR_TAIL) = t;
        append(C, O_RQ, S_RQ_LEN, t);
    } else {
        tr(ad(aid, A_PR_TAIL), T_NEXT) = t;
        ad(aid, A_PR_TAIL) = t;
    }
}

// TraceFrontend._offer: offer the held entry at cycle c; return the next cycle the frontend needs to act.
i64 Controller::offer(i64 c) {
    i64* G = a_.G;
    i64 i = G[G_INDEX], n = G[G_N];
    if (i >= n) return NEVER;
    if (tr(i, T_CYCLE) > c) return tr(i, T_CYCLE);
    i64 ch = tr(i, T_CH);
    const i64* C = ch_row(ch);
    bool room = tr(i, T_WRITE) && !K[K_UNIFIED] ? C[S_WB_LEN] < K[K_WBCAP] : C[S_RQ_LEN] < K[K_TQ];
    if (room) {
        add(ch, i, c + 1);
        i64 j = i + 1;
        G[G_INDEX] = j;
        if (j >= n) return NEVER;
        if (j == G[G_ONE_SHOT] && tr(j, T_CYCLE) > c + 1) {
            G[G_INDEX] = n;
            return NEVER;
        }
        return std::max(c + 1, tr(j, T_CYCLE));
    }
    if (i == G[G_ONE_SHOT]) {
        G[G_INDEX] = n;
        return NEVER;
    }
    return C[S_NEXT_WAKE];
}

bool Controller::log_full() const {
    i64 cap = a_.logc_rows;
    for (i64 ch = 0; ch < a_.channels; ch++) {
        const i64* C = ch_row(ch);
        if (C[S_CMD_LEN] + 2 > cap || C[S_DUAL_LEN] + 1 > cap || C[S_PWR_LEN] + 1 > cap) return true;
    }
    return false;
}

// TraceFrontend.run from cycle c to `stop`.
int Controller::run_trace(i64 c, i64 stop, i64& reached) {
    i64 nch = a_.channels;
    while (c < stop) {
        if (log_full()) {
            reached = c;
            return 1;
        }
        for (i64 ch = 0; ch < nch; ch++)
            if (ch_row(ch)[S_NEXT_WAKE] <= c) tick(ch, c);
        i64 nxt = offer(c);
        for (i64 ch = 0; ch < nch; ch++) nxt = std::min(nxt, ch_row(ch)[S_NEXT_WAKE]);
        c = std::max(nxt, c + 1);
    }
    reached = c;
    return 0;
}

// ---- requests one by one (MemorySystem.add_transaction, run_until)
Engine::Engine(const EngineConfig& cfg) : cfg_(cfg) {
    trace_logs_ = false;
    ch_.assign(cfg_.channels * cfg_.row_len, 0);
    rebind();
    for (i64 ch = 0; ch < cfg_.channels; ch++) {
        i64* C = ch_row(ch);
        C[S_NEXT_DUE] = K[K_REF_INTERVAL];
        C[S_DIRTY] = 1;
        for (i64 b = 0; b < K[K_NB]; b++) C[K[O_OPEN_ROW] + b] = -1;
        for (i64 q = 0; q < K[K_NQ]; q++) C[K[O_BOUND] + q] = NEVER;
    }
}

void Engine::rebind() {
    TraceArrays a{};
    a.K = cfg_.K.data();
    a.CH = ch_.data();
    a.TR = tr_.data();
    a.AD = ad_.data();
    a.channels = cfg_.channels;
    a.row_len = cfg_.row_len;
    attach(a);
}

void Engine::decode(i64 addr, i64& ch, i64& rank, i64& bank, i64& row, i64& col) const {
    i64 a = addr >> cfg_.shift;
    i64 v[6];
    for (int i = 0; i < 6; i++) v[i] = (a >> cfg_.field_pos[i]) & ((i64(1) << cfg_.field_width[i]) - 1);
    ch = v[0];
    rank = v[1];
    bank = (v[1] * K[K_BG] + v[2]) * K[K_BPG] + v[3];
    row = v[4];
    col = v[5];
}

int Engine::channel_of(i64 addr) const {
    i64 a = addr >> cfg_.shift;
    return (int)((a >> cfg_.field_pos[0]) & ((i64(1) << cfg_.field_width[0]) - 1));
}

bool Engine::will_accept(i64 addr, bool write) const {
    const i64* C = ch_row(channel_of(addr));
    if (write && !K[K_UNIFIED]) return C[S_WB_LEN] < K[K_WBCAP];
    return C[S_RQ_LEN] < K[K_TQ];
}

void Engine::add(i64 addr, bool write, uint64_t tag) {
    i64 ch, rank, bank, row, col;
    decode(addr, ch, rank, bank, row, col);
    i64 aid;
    auto found = aid_of_.find(addr);
    if (found != aid_of_.end()) {
        aid = found->second;
    } else {
        if (!free_ad_.empty()) {
            aid = free_ad_.back();
            free_ad_.pop_back();
        } else {
            aid = (i64)addr_of_aid_.size();
            addr_of_aid_.push_back(0);
            ad_.resize(ad_.size() + 3);
        }
        addr_of_aid_[aid] = addr;
        for (int f = 0; f < 3; f++) ad_[aid * 3 + f] = -1;
        aid_of_.emplace(addr, aid);
    }
    i64 t;
    if (!free_tr_.empty()) {
        t = free_tr_.back();
        free_tr_.pop_back();
    } else {
        t = (i64)tags_.size();
        tags_.push_back(0);
        tr_.resize(tr_.size() + T_SIZE);
    }
    tags_[t] = tag;
    i64 fields[T_SIZE] = {0};
    fields[T_AID] = aid;
    fields[T_WRITE] = write;
    fields[T_CYCLE] = clk_;
    fields[T_CH] = ch;
    fields[T_RANK] = rank;
    fields[T_BANK] = bank;
    fields[T_ROW] = row;
    fields[T_COL] = col;
    fields[T_ADDED] = fields[T_COMPLETE] = fields[T_NEXT] = -1;
    std::copy(fields, fields + T_SIZE, tr_.begin() + t * T_SIZE);
    rebind();
    Controller::add(ch, t, clk_);
    collect();
}

// Completions become (tag, cycle); rows done with are freed, and an address with nothing in flight forgotten.
void Engine::collect() {
    for (i64 t : completed_) done_.push_back({tags_[t], tr(t, T_COMPLETE)});
    completed_.clear();
    for (i64 t : retired_) {
        free_tr_.push_back(t);
        i64 aid = tr(t, T_AID);
        if (ad(aid, A_PR_HEAD) >= 0 || ad(aid, A_PW) >= 0) continue;
        auto it = aid_of_.find(addr_of_aid_[aid]);
        if (it != aid_of_.end() && it->second == aid) {
            aid_of_.erase(it);
            free_ad_.push_back(aid);
        }
    }
    retired_.clear();
}

std::vector<Completion>& Engine::completions() { return done_; }

void Engine::run_until(i64 end) {
    while (clk_ < end) {
        i64 nxt = NEVER;
        for (i64 ch = 0; ch < cfg_.channels; ch++) nxt = std::min(nxt, ch_row(ch)[S_NEXT_WAKE]);
        nxt = std::max(nxt, clk_);
        if (nxt >= end) {
            clk_ = end;
            break;
        }
        for (i64 ch = 0; ch < cfg_.channels; ch++)
            if (ch_row(ch)[S_NEXT_WAKE] <= nxt) tick(ch, nxt);
        clk_ = nxt + 1;
    }
    collect();
}

}  // namespace memsim
