// A C interface to the native engine, for memsim's Python side (ctypes): trace runs on the caller's arrays
// (memsim.compiled.bridge), the plain-trace parser (memsim.trace), requests one by one (memsim.cosim.native_engine,
// the tests that check it command for command against the Python engine) and the AXI slave.
#include <cstring>
#include <exception>
#include <string>

#include "axi_slave.h"
#include "memsim_engine.h"

using memsim::Engine;
using memsim::EngineConfig;

namespace {
void say(const std::string& msg, char* err, int errlen) {
    if (err && errlen > 0) {
        std::strncpy(err, msg.c_str(), (size_t)errlen - 1);
        err[errlen - 1] = 0;
    }
}
}  // namespace

extern "C" {

void* memsim_engine_open(const char* config_path, char* err, int errlen) {
    EngineConfig cfg;
    std::string error;
    if (!memsim::load_config(config_path, cfg, error)) {
        say(error, err, errlen);
        return nullptr;
    }
    try {
        return new Engine(cfg);
    } catch (const std::exception& e) {
        say(e.what(), err, errlen);
        return nullptr;
    }
}

void memsim_engine_close(void* e) { delete static_cast<Engine*>(e); }

int memsim_engine_will_accept(void* e, long long addr, int write) {
    return static_cast<Engine*>(e)->will_accept(addr, write != 0);
}

void memsim_engine_add(void* e, long long addr, int write, unsigned long long tag) {
    static_cast<Engine*>(e)->add(addr, write != 0, tag);
}

void memsim_engine_run_until(void* e, long long end) { static_cast<Engine*>(e)->run_until(end); }

long long memsim_engine_clk(void* e) { return static_cast<Engine*>(e)->clk(); }

// Moves up to `max` completions (tag, memory cycle) out of the engine; returns how many.
int memsim_engine_completions(void* e, unsigned long long* tags, long long* cycles, int max) {
    auto& done = static_cast<Engine*>(e)->completions();
    int n = (int)std::min<size_t>(done.size(), (size_t)max);
    for (int i = 0; i < n; i++) {
        tags[i] = done[i].tag;
        cycles[i] = done[i].cycle;
    }
    done.erase(done.begin(), done.begin() + n);
    return n;
}

void memsim_engine_log_commands(void* e, int on) { static_cast<Engine*>(e)->set_log_commands(on != 0); }

// Copies the command log, 8 values per command (cycle, channel, cmd, rank, bank, row, column, hit), into
// `out` (room for `max` commands); returns the number of commands logged in all.
long long memsim_engine_commands(void* e, long long* out, long long max) {
    const auto& log = static_cast<Engine*>(e)->command_log();
    long long n = (long long)log.size() / 8;
    std::memcpy(out, log.data(), (size_t)std::min(n, max) * 8 * sizeof(long long));
    return n;
}
}

// ---- trace runs: the arrays of memsim.compiled.bridge.EngineArrays, row-major int64; dims = channels, CH row
// length, LOGT rows, LOGC rows, LOGC width. Returns 0 (done) or 1 (grow the command log and call again) and
// the cycle reached in `reached`.
using memsim::i64;
extern "C" int memsim_trace_run(const i64* K, i64* CH, i64* TR, i64* AD, i64* LOGT, i64* LOGC, i64* G,
                                const i64* dims, i64 c, i64 stop, i64* reached) {
    memsim::TraceArrays a{K, CH, TR, AD, LOGT, LOGC, G, dims[0], dims[1], dims[2], dims[3], dims[4]};
    memsim::Controller ctrl(a);
    i64 at = c;
    int status = ctrl.run_trace(c, stop, at);
    *reached = at;
    return status;
}

// ---- the AXI slave (SimDRAM's timing), driven one design clock edge at a time
extern "C" {

void* memsim_slave_open(const char* config_path, long long mem_base, long long mem_size, long long word_bytes,
                        long long clock_hz, const char* log_path, char* err, int errlen) {
    EngineConfig cfg;
    std::string error;
    if (!memsim::load_config(config_path, cfg, error)) {
        say(error, err, errlen);
        return nullptr;
    }
    memsim::SlaveParams p;
    p.mem_base = mem_base;
    p.mem_size = mem_size;
    p.word_bytes = word_bytes;
    p.clock_hz = clock_hz;
    p.log_path = log_path ? log_path : "";
    try {
        return new memsim::AxiSlave(cfg, p);
    } catch (const std::exception& e) {
        say(e.what(), err, errlen);
        return nullptr;
    }
}

void memsim_slave_close(void* s) { delete static_cast<memsim::AxiSlave*>(s); }

// Copies `n` bytes into the backing memory at `offset` (from mem_base), before traffic starts.
void memsim_slave_poke(void* s, long long offset, const unsigned char* data, long long n) {
    std::memcpy(static_cast<memsim::AxiSlave*>(s)->memory() + offset, data, (size_t)n);
}

// in: reset, ar_valid, ar_addr, ar_id, ar_size, ar_len, aw_valid, aw_addr, aw_id, aw_size, aw_len, w_valid,
//     w_strb, w_last, r_ready, b_ready; out: ar_ready, aw_ready, w_ready, r_valid, r_id, r_resp, r_last,
//     b_valid, b_id, b_resp. Returns 0, or -1 with the protocol error in `err`.
int memsim_slave_tick(void* s, const long long* in, const unsigned char* w_data, long long* out,
                      unsigned char* r_data, char* err, int errlen) {
    auto* slave = static_cast<memsim::AxiSlave*>(s);
    memsim::AxiInputs i;
    i.reset = in[0];
    i.ar_valid = in[1];
    i.ar_addr = in[2];
    i.ar_id = in[3];
    i.ar_size = in[4];
    i.ar_len = in[5];
    i.aw_valid = in[6];
    i.aw_addr = in[7];
    i.aw_id = in[8];
    i.aw_size = in[9];
    i.aw_len = in[10];
    i.w_valid = in[11];
    i.w_strb = (unsigned long long)in[12];
    i.w_last = in[13];
    i.r_ready = in[14];
    i.b_ready = in[15];
    i.w_data = w_data;
    if (!slave->tick(i)) {
        say(slave->error(), err, errlen);
        return -1;
    }
    const memsim::AxiOutputs& o = slave->outputs();
    long long values[10] = {o.ar_ready, o.aw_ready, o.w_ready, o.r_valid, o.r_id, o.r_resp, o.r_last,
                            o.b_valid, o.b_id, o.b_resp};
    std::memcpy(out, values, sizeof values);
    std::memcpy(r_data, o.r_data.data(), o.r_data.size());
    return 0;
}
}
