// Chipyard's SimDRAM DPI functions, backed by memsim's native engine instead of DRAMSim.
//
// The argument lists and types are SimDRAM's (testchipip, vsrc/SimDRAM.v): memory_init returns the
// chandle that memory_tick receives each clock. Which memsim part to simulate comes from a native config
// file (`zaya memsim cosim simdram CONFIG -o DIR` writes one): the plusarg +memsim_config=FILE, else the
// environment variable MEMSIM_CONFIG_FILE. +memsim_log=FILE (or MEMSIM_LOG_FILE) logs every memsim request.
// CLOCK_HZ is the design clock the slave converts memsim's latencies to; 0 means memsim's own tCK.
#include <svdpi.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include "axi_slave.h"
#include "memsim_simdram.h"

// The simulator's command line when it offers VPI (Verilator built with --vpi, VCS, Xcelium); weak, so the
// library also loads into a simulator without VPI, where only the environment variables apply.
extern "C" {
typedef struct {
    int argc;
    char** argv;
    char* product;
    char* version;
} memsim_vlog_info_t;
int vpi_get_vlog_info(memsim_vlog_info_t*) __attribute__((weak));
}

namespace {
std::string setting(const char* plusarg, const char* env) {
    memsim_vlog_info_t info;
    if (vpi_get_vlog_info && vpi_get_vlog_info(&info)) {
        std::string prefix = std::string("+") + plusarg + "=";
        for (int i = 1; i < info.argc; i++)
            if (std::strncmp(info.argv[i], prefix.c_str(), prefix.size()) == 0) return info.argv[i] + prefix.size();
    }
    const char* value = std::getenv(env);
    return value ? value : "";
}

[[noreturn]] void fail(const std::string& msg) {
    std::fprintf(stderr, "memsim SimDRAM: %s\n", msg.c_str());
    std::fflush(stderr);
    std::exit(2);
}
}  // namespace

extern "C" void* memory_init(int chip_id, long long mem_size, long long word_size, long long line_size,
                             long long id_bits, long long clock_hz, long long mem_base, int addr_bits) {
    (void)chip_id;
    (void)line_size;  // memsim's line is the part's request size
    (void)id_bits;
    // like SimDRAM: only ADDR_BITS of the base are meaningful (some simulators sign-extend the parameter)
    if (addr_bits > 0 && addr_bits < 64) mem_base &= (1LL << addr_bits) - 1;
    std::string path = setting("memsim_config", "MEMSIM_CONFIG_FILE");
    if (path.empty())
        fail("no memsim config: pass +memsim_config=FILE or set MEMSIM_CONFIG_FILE "
             "(write one with `zaya memsim cosim simdram CONFIG -o DIR`)");
    memsim::EngineConfig cfg;
    std::string error;
    if (!memsim::load_config(path, cfg, error)) fail(error);
    memsim::SlaveParams p;
    p.mem_base = mem_base;
    p.mem_size = mem_size;
    p.word_bytes = word_size;
    p.clock_hz = clock_hz;
    p.log_path = setting("memsim_log", "MEMSIM_LOG_FILE");
    try {
        return new memsim::AxiSlave(cfg, p);
    } catch (const std::exception& e) {
        fail(e.what());
    }
}

extern "C" void memory_tick(void* channel, unsigned char reset, unsigned char ar_valid, unsigned char* ar_ready,
                            long long ar_addr, int ar_id, int ar_size, int ar_len, unsigned char aw_valid,
                            unsigned char* aw_ready, long long aw_addr, int aw_id, int aw_size, int aw_len,
                            unsigned char w_valid, unsigned char* w_ready, int w_strb, const svOpenArrayHandle w_data,
                            unsigned char w_last, unsigned char* r_valid, unsigned char r_ready, int* r_id,
                            int* r_resp, const svOpenArrayHandle r_data, unsigned char* r_last,
                            unsigned char* b_valid, unsigned char b_ready, int* b_id, int* b_resp) {
    auto* slave = static_cast<memsim::AxiSlave*>(channel);
    uint8_t wbytes[32];
    int n = svSize(w_data, 1);
    for (int i = 0; i < n && i < 32; i++) wbytes[i] = *static_cast<const uint8_t*>(svGetArrElemPtr1(w_data, i));
    memsim::AxiInputs in;
    in.reset = reset;
    in.ar_valid = ar_valid;
    in.ar_addr = ar_addr;
    in.ar_id = ar_id;
    in.ar_size = ar_size;
    in.ar_len = ar_len;
    in.aw_valid = aw_valid;
    in.aw_addr = aw_addr;
    in.aw_id = aw_id;
    in.aw_size = aw_size;
    in.aw_len = aw_len;
    in.w_valid = w_valid;
    in.w_strb = (uint32_t)w_strb;
    in.w_data = wbytes;
    in.w_last = w_last;
    in.r_ready = r_ready;
    in.b_ready = b_ready;
    if (!slave->tick(in)) fail(slave->error());
    const memsim::AxiOutputs& out = slave->outputs();
    *ar_ready = out.ar_ready;
    *aw_ready = out.aw_ready;
    *w_ready = out.w_ready;
    *r_valid = out.r_valid;
    *r_id = (int)out.r_id;
    *r_resp = (int)out.r_resp;
    *r_last = out.r_last;
    int m = svSize(r_data, 1);
    for (int i = 0; i < m; i++) {
        svBitVecVal v = i < (int)out.r_data.size() ? out.r_data[i] : 0;
        svPutBitArrElem1VecVal(r_data, &v, i);
    }
    *b_valid = out.b_valid;
    *b_id = (int)out.b_id;
    *b_resp = (int)out.b_resp;
}
