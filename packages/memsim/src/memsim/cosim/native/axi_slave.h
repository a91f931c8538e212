// An AXI4 slave on memsim's native engine, with SimDRAM's handshake timing: each tick samples the
// design's outputs of this clock edge, completes the handshakes offered by the slave's outputs of the
// previous tick, and computes the outputs for the next edge (registered by the Verilog wrapper).
//
// Same policies and timing contract as the cocotb port (memsim/cosim/axi_port.py): one memsim request per
// memory line a burst touches, handed over in arrival order, per design cycle as many reads (and writes) as
// memory cycles passed, at least one; a line completed L memory cycles after it entered at design edge a is available from edge
// a + ceil(L x tCK / design period) + PORT_CYCLES; read data of one ID in AR order, write responses of one
// ID in AW order, bursts of different IDs as memsim finishes them; W follows AW order. Read data is the
// memory as it was when the read entered memsim, and a write's bytes land when it enters (the arrival-order
// semantics of memsim's functional store). SimDRAM's interface carries no AxBURST: bursts are INCR.
#pragma once

#include <cstdint>
#include <cstdio>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "memsim_engine.h"

namespace memsim {

constexpr i64 PORT_CYCLES = 1;  // as memsim.cosim.axi_port.PORT_CYCLES

// The design's outputs at one clock edge.
struct AxiInputs {
    bool reset = false;
    bool ar_valid = false;
    i64 ar_addr = 0, ar_id = 0, ar_size = 0, ar_len = 0;
    bool aw_valid = false;
    i64 aw_addr = 0, aw_id = 0, aw_size = 0, aw_len = 0;
    bool w_valid = false;
    uint64_t w_strb = 0;
    const uint8_t* w_data = nullptr;
    bool w_last = false;
    bool r_ready = false, b_ready = false;
};

// The slave's outputs for the next edge.
struct AxiOutputs {
    bool ar_ready = false, aw_ready = false, w_ready = false;
    bool r_valid = false, r_last = false;
    i64 r_id = 0, r_resp = 0;
    std::vector<uint8_t> r_data;
    bool b_valid = false;
    i64 b_id = 0, b_resp = 0;
};

struct SlaveParams {
    i64 mem_base = 0, mem_size = 0, word_bytes = 8, max_bursts = 16;
    i64 clock_hz = 0;  // the design's clock; 0: the memory's own (1 / tCK)
    std::string log_path;  // one line per memsim request, for tests (empty: none)
};

class AxiSlave {
  public:
    AxiSlave(const EngineConfig& cfg, const SlaveParams& params);
    ~AxiSlave();
    // One design clock edge: returns false and sets error() on a protocol error.
    bool tick(const AxiInputs& in);
    const AxiOutputs& outputs() const { return out_; }
    const std::string& error() const { return error_; }
    uint8_t* memory() { return mem_; }  // the backing bytes (mem_size, starting at mem_base)
    Engine& engine() { return engine_; }
    i64 edge() const { return edge_; }
    i64 memory_cycles(i64 edge) const;
    i64 design_cycles(i64 memory_cycles) const;

  private:
    struct Line {
        i64 line = 0;      // line address (relative to mem_base)
        i64 add_edge = -1, add_mem = -1, done_mem = -1;
        std::vector<uint8_t> data;  // reads: the line when it entered; writes: merged bytes and mask
        std::vector<uint8_t> mask;
    };
    struct Burst {
        bool write = false;
        i64 id = 0, addr = 0, len = 0, size = 0, accept_edge = 0, next_beat = 0;
        std::vector<Line> lines;
        std::vector<std::vector<int>> beat_lines;  // per beat, the indices of its lines
        std::vector<int> last_beat;                // per line, the last beat that touches it
    };

    Engine engine_;
    SlaveParams p_;
    i64 ratio_num_ = 1, ratio_den_ = 1;  // memory cycles per design cycle
    i64 line_bytes_;
    uint8_t* mem_ = nullptr;
    i64 edge_ = 0;
    std::deque<std::unique_ptr<Burst>> bursts_;     // every burst in flight (owner)
    std::map<i64, std::deque<Burst*>> reads_, writes_;  // per ID, in address order
    std::deque<Burst*> w_order_;
    std::deque<std::pair<Burst*, int>> read_fifo_, write_fifo_;
    std::unordered_map<uint64_t, Line*> waiting_;  // tag -> line in memsim
    uint64_t next_tag_ = 1;
    i64 in_flight_ = 0;
    Burst* sending_ = nullptr;    // the read burst on the R channel
    Burst* b_offered_ = nullptr;  // the write burst whose B is offered
    AxiOutputs out_;
    std::string error_;
    FILE* log_ = nullptr;

    bool accept(bool write, i64 addr, i64 id, i64 size, i64 len);
    void write_beat(const AxiInputs& in);
    void issue_lines();
    bool line_ready(const Line& l) const;
    bool beat_ready(const Burst& b, i64 beat) const;
    Burst* next_read();
    Burst* next_write_response();
    void retire(std::map<i64, std::deque<Burst*>>& table, Burst* b);
    void beat_lanes(const Burst& b, i64 beat, i64& addr, i64& lo, i64& hi) const;
    void compute_outputs();
};

}  // namespace memsim
