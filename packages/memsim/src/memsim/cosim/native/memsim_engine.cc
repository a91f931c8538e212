// memsim's controller in C++ (see memsim_engine.h). memsim_layout.h is generated from
// memsim/compiled/layout.py when the library is built, so the array layout has one home.
#include "memsim_engine.h"

#include <algorithm>

#include "memsim_layout.h"

namespace memsim {

Engine::Engine(const EngineConfig& cfg) : cfg_(cfg), K(cfg_.K.data()) {
    CH.assign(cfg_.channels, std::vector<i64>(cfg_.row_len, 0));
    for (auto& row : CH) {
        i64* C = row.data();
        C[S_NEXT_DUE] = K[K_REF_INTERVAL];
        C[S_DIRTY] = 1;
        for (i64 b = 0; b < K[K_NB]; b++) C[K[O_OPEN_ROW] + b] = -1;
        for (i64 q = 0; q < K[K_NQ]; q++) C[K[O_BOUND] + q] = NEVER;
    }
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

int Engine::alloc(const Trans& t) {
    if (!free_.empty()) {
        int i = free_.back();
        free_.pop_back();
        trans_[i] = t;
        return i;
    }
    trans_.push_back(t);
    return (int)trans_.size() - 1;
}

void Engine::release(int t) { free_.push_back(t); }

void Engine::drop_addr_if_idle(i64 addr) {
    auto it = addrs_.find(addr);
    if (it != addrs_.end() && it->second.pr_head < 0 && it->second.pw < 0) addrs_.erase(it);
}

// ---- command queues (kernel.py)
i64 Engine::queue_of(i64 rank, i64 bank) const { return K[K_PER_BANK] ? bank : rank; }

void Engine::remove(i64* C, i64 q, i64 pos) {
    i64 n = C[K[O_QLEN] + q];
    i64 base = K[O_Q] + q * K[K_CQ] * QF_SIZE;
    for (i64 i = base + pos * QF_SIZE; i < base + (n - 1) * QF_SIZE; i++) C[i] = C[i + QF_SIZE];
    C[K[O_QLEN] + q] = n - 1;
    C[K[O_BOUND] + q] = 0;
    C[S_COUNT] -= 1;
    C[S_DIRTY] = 1;
}

void Engine::next_command(i64* C, i64 clk, i64& req, i64& q_out, i64& pos) {
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

i64 Engine::cmdq_ready_at(const i64* C) const {
    i64 best = NEVER, in_refresh = C[S_IN_REFRESH], lo = C[S_SKIP_LO], hi = C[S_SKIP_HI];
    for (i64 i = 0; i < K[K_NQ]; i++)
        if (!(in_refresh && lo <= i && i < hi)) best = std::min(best, C[K[O_BOUND] + i]);
    return best;
}

void Engine::begin_refresh(i64* C, i64 cmd, i64 rank, i64 bank) {
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

// ---- controller (kernel.py)
void Engine::complete(int t, i64 cycle) { done_.push_back({trans_[t].tag, cycle}); }

void Engine::log_and_apply(int ch, i64 cmd, i64 rank, i64 bank, i64 row, i64 col, i64 clk, i64 hit) {
    i64* C = CH[ch].data();
    if (log_commands) {
        i64 entry[8] = {clk, ch, cmd, rank, bank, row, col, hit};
        command_log.insert(command_log.end(), entry, entry + 8);
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

void Engine::issue_found(int ch, i64 req, i64 q, i64 pos, i64 clk) {
    i64* C = CH[ch].data();
    i64 addr = qf(C, q, pos, QF_AID), rank = qf(C, q, pos, QF_RANK), bank = qf(C, q, pos, QF_BANK);
    i64 row = qf(C, q, pos, QF_ROW), col = qf(C, q, pos, QF_COL);
    if (req < 4) remove(C, q, pos);
    if (req == RD || req == RDA) {
        AddrState& a = addrs_[addr];
        int t = a.pr_head;
        a.pr_head = a.pr_tail = -1;
        while (t >= 0) {
            complete(t, clk + K[K_READ_DELAY]);
            int next = trans_[t].next;
            release(t);
            t = next;
        }
        drop_addr_if_idle(addr);
    } else if (req == WR || req == WRA) {
        AddrState& a = addrs_[addr];
        release(a.pw);
        a.pw = -1;
        drop_addr_if_idle(addr);
    }
    i64 hit = (req < 4 && C[K[O_ROW_HITS] + bank] != 0) ? 1 : 0;
    log_and_apply(ch, req, rank, bank, row, col, clk, hit);
}

// The k-th refresh of the rotation (RefreshSchedule.entry, kernel.py _refresh_entry): pending refreshes are
// a window (head, length) of the rotation, so a queue that grows without bound (DRAMSim3's per-bank refresh)
// needs no storage.
void Engine::refresh_entry(i64 k, i64& cmd, i64& rank, i64& bank) const {
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

// RefreshSchedule.due: every rank at once for jedec-mode simultaneous refresh, else one more of the rotation
// (DRAMSim3's simultaneous refresh queues the first rank only).
void Engine::refresh_due(i64* C) {
    C[S_NEXT_DUE] += K[K_REF_INTERVAL];
    C[S_RFQ_LEN] += K[K_ALL_RANKS] ? K[K_RANKS] : 1;
}

i64 Engine::refresh_step(int ch, i64 clk) {
    i64* C = CH[ch].data();
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

bool Engine::drain_due(const i64* C) const {
    i64 n = C[S_WB_LEN];
    return n >= K[K_WBCAP] || (n > K[K_DRAIN] && C[S_COUNT] == 0);
}

bool Engine::move_first(i64* C, i64 queue_key, i64 len_key) {
    i64 n = C[len_key], base = K[queue_key];
    for (i64 i = 0; i < n; i++) {
        const Trans& tr = trans_[C[base + i]];
        i64 q = queue_of(tr.rank, tr.bank);
        i64 slot = C[K[O_QLEN] + q];
        if (slot >= K[K_CQ]) continue;
        if (tr.write && !K[K_UNIFIED]) {
            auto it = addrs_.find(tr.addr);
            if (it != addrs_.end() && it->second.pr_head >= 0) {
                C[S_WRITE_DRAINING] = 0;
                return false;
            }
            C[S_WRITE_DRAINING] -= 1;
        }
        i64 f = K[O_Q] + (q * K[K_CQ] + slot) * QF_SIZE;
        C[f + QF_CMD] = tr.write ? K[K_WR_CMD] : K[K_RD_CMD];
        C[f + QF_AID] = tr.addr;
        C[f + QF_RANK] = tr.rank;
        C[f + QF_BANK] = tr.bank;
        C[f + QF_ROW] = tr.row;
        C[f + QF_COL] = tr.col;
        C[K[O_QLEN] + q] = slot + 1;
        C[K[O_BOUND] + q] = 0;
        C[S_COUNT] += 1;
        for (i64 j = base + i; j < base + n - 1; j++) C[j] = C[j + 1];
        C[len_key] = n - 1;
        return true;
    }
    return false;
}

bool Engine::schedule_transaction(i64* C) {
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

i64 Engine::next_event(const i64* C, i64 clk) const {
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

void Engine::tick(int ch, i64 clk) {
    i64* C = CH[ch].data();
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
            if (pos >= 0 && (req < 4) != (issued < 4)) issue_found(ch, req, q, pos, clk);
        }
        C[S_POWER_DIRTY] = 0;  // power runs are not logged here (the Python engine's stats do that)
    }
    if (schedule_transaction(C)) C[S_NEXT_WAKE] = clk + 1;
    else C[S_NEXT_WAKE] = next_event(C, clk);
}

// ---- frontend (frontend_kernel.py add, MemorySystem.run_until)
bool Engine::will_accept(i64 addr, bool write) const {
    const i64* C = CH[channel_of(addr)].data();
    if (write && !K[K_UNIFIED]) return C[S_WB_LEN] < K[K_WBCAP];
    return C[S_RQ_LEN] < K[K_TQ];
}

void Engine::add(i64 addr, bool write, uint64_t tag) {
    i64 ch, rank, bank, row, col;
    decode(addr, ch, rank, bank, row, col);
    i64* C = CH[ch].data();
    i64 clk = clk_;
    C[S_LAST_ARRIVAL] = clk;
    C[S_NEXT_WAKE] = std::min(C[S_NEXT_WAKE], clk);
    C[S_DIRTY] = 1;
    int t = alloc({addr, write, rank, bank, row, col, clk, -1, tag});
    AddrState& a = addrs_[addr];
    if (write) {
        done_.push_back({tag, clk + 1});
        if (a.pw < 0) {
            a.pw = t;
            i64 key = K[K_UNIFIED] ? O_RQ : O_WB, len = K[K_UNIFIED] ? S_RQ_LEN : S_WB_LEN;
            C[K[key] + C[len]] = t;
            C[len] += 1;
        } else {
            release(t);  // merged into the buffered write
        }
        return;
    }
    if (a.pw >= 0) {
        done_.push_back({tag, clk + 1});  // forwarded from the write buffer
        release(t);
        return;
    }
    if (a.pr_head < 0) {
        a.pr_head = a.pr_tail = t;
        C[K[O_RQ] + C[S_RQ_LEN]] = t;
        C[S_RQ_LEN] += 1;
    } else {
        trans_[a.pr_tail].next = t;
        a.pr_tail = t;
    }
}

void Engine::run_until(i64 end) {
    while (clk_ < end) {
        i64 nxt = NEVER;
        for (auto& row : CH) nxt = std::min(nxt, row[S_NEXT_WAKE]);
        nxt = std::max(nxt, clk_);
        if (nxt >= end) {
            clk_ = end;
            return;
        }
        for (int ch = 0; ch < (int)CH.size(); ch++)
            if (CH[ch][S_NEXT_WAKE] <= nxt) tick(ch, nxt);
        clk_ = nxt + 1;
    }
}

}  // namespace memsim
