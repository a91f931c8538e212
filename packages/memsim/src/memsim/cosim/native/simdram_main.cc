// The C++ main of memsim's SimDRAM test bench (hdl/simdram_tb.sv under Verilator): reset, then clock until
// the DMA is done or +max_cycles=N, and print one JSON line with the DMA's results and the speed.
#include <chrono>
#include <cstdio>
#include <ctime>
#include <cstdlib>
#include <cstring>

#include "Vsimdram_tb.h"
#include "verilated.h"

int main(int argc, char** argv) {
    auto* ctx = new VerilatedContext;
    ctx->commandArgs(argc, argv);
    auto* top = new Vsimdram_tb{ctx};
    long long max_cycles = 50000000;
    const char* arg = ctx->commandArgsPlusMatch("max_cycles=");
    if (arg && *arg) max_cycles = std::atoll(arg + std::strlen("+max_cycles="));
    top->rst = 1;
    for (int i = 0; i < 4; i++) {
        top->clk = 0;
        top->eval();
        top->clk = 1;
        top->eval();
    }
    top->rst = 0;
    auto start = std::chrono::steady_clock::now();
    std::clock_t cpu_start = std::clock();
    long long cycles = 0;
    while (!top->done && cycles < max_cycles && !ctx->gotFinish()) {
        top->clk = 0;
        top->eval();
        top->clk = 1;
        top->eval();
        cycles++;
    }
    double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    double cpu = double(std::clock() - cpu_start) / CLOCKS_PER_SEC;
    std::printf("{\"done\": %d, \"errors\": %u, \"cycles\": %lld, \"dma_cycles\": %u, \"first_ar\": %u, "
                "\"first_r\": %u, \"wall_s\": %.6f, \"cpu_s\": %.6f, \"cycles_per_s\": %.1f, "
                "\"cycles_per_cpu_s\": %.1f}\n",
                (int)top->done, top->errors, cycles, top->cycle, top->first_ar, top->first_r, wall, cpu,
                cycles / (wall > 0 ? wall : 1e-9), cycles / (cpu > 0 ? cpu : 1e-9));
    top->final();
    delete top;
    delete ctx;
    return 0;
}
