// memsim's fast engine: the Python controller (memsim.controller, memsim.scheduling, memsim.command_queue,
// memsim.channel_state) in C++, the same steps in the same order, on the flat arrays whose layout is
// memsim/compiled/layout.py (generated into memsim_layout.h). Each function names its Python twin; the reasons
// for each rule are documented there.
//
// One controller serves two drivers:
// - trace runs (memsim.compiled.bridge through engine_capi.cc's memsim_trace_run): the caller owns every array
//   (K, CH, TR, AD and the logs LOGT / LOGC, numpy arrays), the engine reads the trace from TR and writes the
//   logs the statistics are computed from, so the Python objects can take the final state back;
// - requests one by one (co-simulation, the AXI slave, SimDRAM): the engine owns its arrays, a transaction row
//   per request in flight and an address row per address in flight (a hash map finds it), and reports
//   completions as (tag, cycle).
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "memsim_layout.h"

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

// The arrays of a trace run, as memsim.compiled.bridge.EngineArrays holds them (row-major int64).
struct TraceArrays {
    const i64* K;
    i64* CH;  // [channels][row_len]
    i64* TR;  // [entries][T_SIZE]
    i64* AD;  // [distinct addresses][3]
    i64* LOGT;  // [channels][logt_rows][5]
    i64* LOGC;  // [channels][logc_rows][logc_width]
    i64* G;  // the frontend's cursor
    i64 channels, row_len, logt_rows, logc_rows, logc_width;
};

// The controller on flat arrays (the Python controller's twin).
class Controller {
  public:
    Controller() = default;
    explicit Controller(const TraceArrays& a) { attach(a); }
    void attach(const TraceArrays& a);
    // Trace runs: simulate from cycle c until `stop`; returns 0 (done) or 1 (the command log needs more room:
    // grow it and call again, the state is whole at every cycle boundary); `reached` is the cycle reached.
    int run_trace(i64 c, i64 stop, i64& reached);

  protected:
    TraceArrays a_{};
    const i64* K = nullptr;
    bool trace_logs_ = true;  // write LOGT / LOGC (trace runs); requests one by one log through the hooks
    bool log_commands_ = false;
    std::vector<i64> command_log_;  // (cycle, channel, cmd, rank, bank, row, column, hit), when asked for
    std::vector<i64> completed_;  // transactions completed (requests one by one: reported with their tags)
    std::vector<i64> retired_;  // transaction rows done with (requests one by one: free for reuse)

    i64* ch_row(i64 ch) const { return a_.CH + ch * a_.row_len; }
    i64& tr(i64 t, int f) const { return a_.TR[t * T_SIZE + f]; }
    i64& ad(i64 aid, int f) const { return a_.AD[aid * 3 + f]; }
    void add(i64 ch, i64 t, i64 clk);
    void tick(i64 ch, i64 clk);

  private:
    // bank state and scheduling (engine_scheduling.cc; ChannelState, memsim.scheduling)
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

    // command queues and controller (memsim_engine.cc; CommandQueues, ChannelController)
    i64 queue_of(i64 rank, i64 bank) const;
    void remove(i64* C, i64 q, i64 pos);
    void next_command(i64* C, i64 clk, i64& req, i64& q, i64& pos);
    i64 cmdq_ready_at(const i64* C) const;
    void begin_refresh(i64* C, i64 cmd, i64 rank, i64 bank);
    void complete(i64 ch, i64 t, i64 cycle);
    void log_and_apply(i64 ch, i64 cmd, i64 rank, i64 bank, i64 row, i64 col, i64 clk, i64 hit);
    void issue_found(i64 ch, i64 req, i64 q, i64 pos, i64 clk);
    void refresh_entry(i64 k, i64& cmd, i64& rank, i64& bank) const;
    void refresh_due(i64* C);
    i64 refresh_step(i64 ch, i64 clk);
    void note_power(i64 ch, i64 clk);
    bool drain_due(const i64* C) const;
    bool move_first(i64* C, i64 queue_key, i64 len_key);
    bool schedule_transaction(i64* C);
    i64 next_event(const i64* C, i64 clk) const;
    void append(i64* C, i64 queue_key, i64 len_key, i64 t);
    i64 offer(i64 c);
    bool log_full() const;
};

// Requests one by one (co-simulation): the controller on arrays it owns.
class Engine : public Controller {
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
    std::vector<Completion>& completions();
    // Command log (cycle, channel, cmd, rank, bank, row, column, hit) when logging is on.
    void set_log_commands(bool on) { log_commands_ = on; }
    const std::vector<i64>& command_log() const { return command_log_; }
    int channel_of(i64 addr) const;

  private:
    EngineConfig cfg_;
    std::vector<i64> ch_, tr_, ad_;
    std::vector<uint64_t> tags_;
    std::vector<i64> free_tr_, free_ad_, addr_of_aid_;
    std::unordered_map<i64, i64> aid_of_;  // address -> its AD row
    std::vector<Completion> done_;
    i64 clk_ = 0;

    void decode(i64 addr, i64& ch, i64& rank, i64& bank, i64& row, i64& col) const;
    void rebind();
    void collect();
};

}  // namespace memsim
