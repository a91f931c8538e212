// memsim's controller in C++: the same steps, in the same order, as the numba engine
// (memsim/compiled/kernel.py, bank_kernel.py, frontend_kernel.py) and so as the Python controller, on the
// same flat configuration array K written by memsim.cosim.native_config. Each function names its Python
// twin; the reasons for each rule are documented there. Requests arrive one by one (add at the current
// cycle) instead of from a trace, so addresses are keys of a hash map instead of trace indices.
#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <unordered_map>
#include <vector>

namespace memsim {

using i64 = int64_t;

// One request's result: the caller's tag and the memory cycle memsim completes it.
struct Completion {
    uint64_t tag;
    i64 cycle;
};

// The engine's configuration as read from a native-config file.
struct EngineConfig {
    std::string name;
    i64 tck_num = 1, tck_den = 1;  // tCK in ns = tck_num / tck_den
    i64 line_bytes = 64, channels = 1, address_bits = 0, shift = 0, row_len = 0;
    i64 field_pos[6] = {0}, field_width[6] = {0};  // ch ra bg ba ro co
    std::vector<i64> K;
};

// Reads the text file; on failure returns false and says why in `error`.
bool load_config(const std::string& path, EngineConfig& cfg, std::string& error);

class Engine {
  public:
    explicit Engine(const EngineConfig& cfg);

    const EngineConfig& config() const { return cfg_; }
    i64 clk() const { return clk_; }
    bool will_accept(i64 addr, bool write) const;
    // Queue a request at the current cycle (check will_accept first). A write completes at clk + 1.
    void add(i64 addr, bool write, uint64_t tag);
    // Simulate up to (not including) cycle `end`, skipping cycles at which nothing can happen.
    void run_until(i64 end);
    // Completions decided since the last call (reads: when their column command issues).
    std::vector<Completion>& completions() { return done_; }
    // Command log (cycle, channel, cmd, rank, bank, row, column, hit) when logging is on.
    bool log_commands = false;
    std::vector<i64> command_log;
    int channel_of(i64 addr) const;

  private:
    struct Trans {
        i64 addr;
        bool write;
        i64 rank, bank, row, col, added;
        int next;  // next merged read of the same address (-1: none)
        uint64_t tag;
    };
    struct AddrState {
        int pr_head = -1, pr_tail = -1, pw = -1;
    };

    EngineConfig cfg_;
    const i64* K;
    std::vector<std::vector<i64>> CH;
    std::vector<Trans> trans_;
    std::vector<int> free_;
    std::unordered_map<i64, AddrState> addrs_;
    std::vector<Completion> done_;
    i64 clk_ = 0;

    void decode(i64 addr, i64& ch, i64& rank, i64& bank, i64& row, i64& col) const;
    int alloc(const Trans& t);
    void release(int t);
    void drop_addr_if_idle(i64 addr);

    // bank state and scheduling (bank_kernel.py)
    i64 qf(const i64* C, i64 q, i64 pos, int field) const;
    i64 earliest(const i64* C, i64 bank, i64 cmd) const;
    i64 window_ready_at(const i64* C, i64 rank) const;
    i64 required(const i64* C, i64 cmd, i64 bank, i64 row) const;
    void rank_ready(const i64* C, i64 cmd, i64 rank, i64 clk, i64& req, i64& bank) const;
    i64 rank_ready_at(const i64* C, i64 cmd, i64 rank) const;
    void update_bank_state(i64* C, i64 cmd, i64 bank, i64 row);
    void state_issue(i64* C, i64 cmd, i64 bank, i64 row, i64 rank, i64 clk);
    i64 queued_required(const i64* C, i64 q, i64 pos) const;
    bool precharge_allowed(const i64* C, i64 q, i64 pos) const;
    bool write_after_read(const i64* C, i64 q, i64 pos) const;
    i64 candidates(const i64* C, i64 q) const;
    void first_ready_general(i64* C, i64 q, i64 clk, i64& req, i64& pos);
    i64 ready_at_general(const i64* C, i64 q) const;
    bool no_pending_hit(const i64* C, i64 q, i64 open_row) const;
    void first_ready(i64* C, i64 q, i64 clk, i64& req, i64& pos);
    i64 ready_at(const i64* C, i64 q) const;

    // command queues and controller (kernel.py)
    i64 queue_of(i64 rank, i64 bank) const;
    void remove(i64* C, i64 q, i64 pos);
    void next_command(i64* C, i64 clk, i64& req, i64& q, i64& pos);
    i64 cmdq_ready_at(const i64* C) const;
    void begin_refresh(i64* C, i64 cmd, i64 rank, i64 bank);
    void complete(int t, i64 cycle);
    void log_and_apply(int ch, i64 cmd, i64 rank, i64 bank, i64 row, i64 col, i64 clk, i64 hit);
    void issue_found(int ch, i64 req, i64 q, i64 pos, i64 clk);
    void refresh_entry(i64 k, i64& cmd, i64& rank, i64& bank) const;
    void refresh_due(i64* C);
    i64 refresh_step(int ch, i64 clk);
    bool drain_due(const i64* C) const;
    bool move_first(i64* C, i64 queue_key, i64 len_key);
    bool schedule_transaction(i64* C);
    i64 next_event(const i64* C, i64 clk) const;
    void tick(int ch, i64 clk);
};

}  // namespace memsim
