// A C interface to the native engine, for memsim's Python side (ctypes): the tests that check it
// command for command against the Python engine, and tools that want memsim's timing at C speed.
#include <cstring>
#include <exception>
#include <string>

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

void memsim_engine_log_commands(void* e, int on) { static_cast<Engine*>(e)->log_commands = on != 0; }

// Copies the command log, 8 values per command (cycle, channel, cmd, rank, bank, row, column, hit), into
// `out` (room for `max` commands); returns the number of commands logged in all.
long long memsim_engine_commands(void* e, long long* out, long long max) {
    auto& log = static_cast<Engine*>(e)->command_log;
    long long n = (long long)log.size() / 8;
    std::memcpy(out, log.data(), (size_t)std::min(n, max) * 8 * sizeof(long long));
    return n;
}
}
