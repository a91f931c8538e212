// An AXI4 slave on memsim's native engine with SimDRAM's handshake timing (see axi_slave.h).
#include "axi_slave.h"

#include <sys/mman.h>

#include <algorithm>
#include <numeric>
#include <stdexcept>

namespace memsim {

namespace {
constexpr i64 BOUNDARY_4K = 4096;

std::string hex(i64 v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%#llx", (long long)v);
    return buf;
}
}  // namespace

AxiSlave::AxiSlave(const EngineConfig& cfg, const SlaveParams& params)
    : engine_(cfg), p_(params), line_bytes_(cfg.line_bytes) {
    i64 capacity = i64(1) << cfg.address_bits;
    if (p_.mem_size <= 0 || p_.mem_size > capacity)
        throw std::runtime_error("mem_size " + hex(p_.mem_size) + " must be positive and at most the capacity of " +
                                 cfg.name + " (" + hex(capacity) + " bytes); use a larger memsim config");
    if (p_.word_bytes < 1 || p_.word_bytes > 32 || (p_.word_bytes & (p_.word_bytes - 1)))
        throw std::runtime_error("word_size " + std::to_string(p_.word_bytes) +
                                 " must be a power of two of 1..32 bytes (SimDRAM passes WSTRB as a 32-bit int)");
    // memory cycles per design cycle = design period / tCK = (1e9 / clock_hz) / (tck_num / tck_den)
    if (p_.clock_hz > 0) {
        i64 num = 1000000000 * cfg.tck_den, den = p_.clock_hz * cfg.tck_num, g = std::gcd(num, den);
        ratio_num_ = num / g;
        ratio_den_ = den / g;
    }
    void* m = mmap(nullptr, (size_t)p_.mem_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                   -1, 0);
    if (m == MAP_FAILED) throw std::runtime_error("cannot map " + hex(p_.mem_size) + " bytes of backing memory");
    mem_ = static_cast<uint8_t*>(m);
    out_.r_data.assign((size_t)p_.word_bytes, 0);
    if (!p_.log_path.empty()) {
        log_ = std::fopen(p_.log_path.c_str(), "w");
        if (!log_) throw std::runtime_error("cannot write the request log " + p_.log_path);
    }
}

AxiSlave::~AxiSlave() {
    if (log_) std::fclose(log_);
    if (mem_) munmap(mem_, (size_t)p_.mem_size);
}

i64 AxiSlave::memory_cycles(i64 edge) const { return (i64)((__int128)edge * ratio_num_ / ratio_den_); }

i64 AxiSlave::design_cycles(i64 memory) const {
    return (i64)(((__int128)memory * ratio_den_ + ratio_num_ - 1) / ratio_num_);
}

void AxiSlave::beat_lanes(const Burst& b, i64 beat, i64& addr, i64& lo, i64& hi) const {
    i64 nb = i64(1) << b.size, wb = p_.word_bytes;
    i64 aligned = b.addr - b.addr % nb;
    addr = beat == 0 ? b.addr : aligned + beat * nb;
    lo = addr % wb;
    hi = beat == 0 ? aligned % wb + nb - 1 : lo + nb - 1;
}

bool AxiSlave::accept(bool write, i64 addr, i64 id, i64 size, i64 len) {
    const char* ch = write ? "AW" : "AR";
    i64 nb = i64(1) << size, beats = len + 1;
    i64 a = addr - p_.mem_base;
    i64 end = a - a % nb + beats * nb;
    if (nb > p_.word_bytes) {
        error_ = std::string(ch) + " at " + hex(addr) + ": 2**size = " + std::to_string(nb) + " bytes exceeds the " +
                 std::to_string(p_.word_bytes) + "-byte bus";
        return false;
    }
    if (a < 0 || end > p_.mem_size) {
        error_ = std::string(ch) + " at " + hex(addr) + " (" + std::to_string(beats) + " beats) is outside memory [" +
                 hex(p_.mem_base) + ", " + hex(p_.mem_base + p_.mem_size) + ")";
        return false;
    }
    if ((p_.mem_base + a) / BOUNDARY_4K != (p_.mem_base + end - 1) / BOUNDARY_4K) {
        error_ = std::string(ch) + " at " + hex(addr) + " (" + std::to_string(beats) +
                 " beats): an INCR burst must not cross a 4 KB boundary";
        return false;
    }
    auto b = std::make_unique<Burst>();
    b->write = write;
    b->id = id;
    b->addr = a;
    b->len = beats;
    b->size = size;
    b->accept_edge = edge_;
    std::map<i64, int> index;
    b->beat_lines.resize(beats);
    for (i64 i = 0; i < beats; i++) {
        i64 baddr, lo, hi;
        beat_lanes(*b, i, baddr, lo, hi);
        i64 base = baddr - baddr % p_.word_bytes;
        for (i64 line = (base + lo) - (base + lo) % line_bytes_; line <= base + hi; line += line_bytes_) {
            auto it = index.find(line);
            int k;
            if (it == index.end()) {
                k = (int)b->lines.size();
                index[line] = k;
                b->lines.emplace_back();
                b->lines.back().line = line;
                b->last_beat.push_back(0);
                if (write) {
                    b->lines.back().data.assign((size_t)line_bytes_, 0);
                    b->lines.back().mask.assign((size_t)line_bytes_, 0);
                }
            } else {
                k = it->second;
            }
            b->beat_lines[i].push_back(k);
            b->last_beat[k] = (int)i;
        }
    }
    Burst* raw = b.get();
    bursts_.push_back(std::move(b));
    in_flight_ += 1;
    if (write) {
        writes_[id].push_back(raw);
        w_order_.push_back(raw);
    } else {
        reads_[id].push_back(raw);
        for (int k = 0; k < (int)raw->lines.size(); k++) read_fifo_.emplace_back(raw, k);
    }
    return true;
}

void AxiSlave::write_beat(const AxiInputs& in) {
    Burst* b = w_order_.front();
    i64 i = b->next_beat, addr, lo, hi;
    beat_lanes(*b, i, addr, lo, hi);
    i64 base = addr - addr % p_.word_bytes;
    for (i64 lane = lo; lane <= hi; lane++) {
        if (!((in.w_strb >> lane) & 1)) continue;
        i64 byte = base + lane;
        for (int k : b->beat_lines[i]) {
            Line& l = b->lines[k];
            if (byte >= l.line && byte < l.line + line_bytes_) {
                l.data[byte - l.line] = in.w_data[lane];
                l.mask[byte - l.line] = 1;
            }
        }
    }
    b->next_beat = i + 1;
    for (int k : b->beat_lines[i])
        if (b->last_beat[k] == i) write_fifo_.emplace_back(b, k);
    if (b->next_beat == b->len) w_order_.pop_front();
}

void AxiSlave::issue_lines() {
    i64 budget = std::max<i64>(1, memory_cycles(edge_) - memory_cycles(edge_ - 1));
    for (int pass = 0; pass < 2; pass++) {
        bool write = pass == 1;
        auto& fifo = write ? write_fifo_ : read_fifo_;
        for (i64 n = 0; n < budget && !fifo.empty(); n++) {
            Line& l = fifo.front().first->lines[fifo.front().second];
            if (!engine_.will_accept(l.line, write)) break;
            uint8_t* bytes = mem_ + l.line;
            if (write) {
                for (i64 j = 0; j < line_bytes_; j++)
                    if (l.mask[j]) bytes[j] = l.data[j];
            } else {
                l.data.assign(bytes, bytes + line_bytes_);
            }
            uint64_t tag = next_tag_++;
            waiting_[tag] = &l;
            l.add_edge = edge_;
            l.add_mem = engine_.clk();
            if (log_) std::fprintf(log_, "A %llu %c %lld %lld %lld\n", (unsigned long long)tag, write ? 'W' : 'R',
                                   (long long)l.line, (long long)l.add_mem, (long long)l.add_edge);
            engine_.add(l.line, write, tag);
            fifo.pop_front();
        }
    }
}

bool AxiSlave::line_ready(const Line& l) const {
    return l.done_mem >= 0 && l.add_edge + design_cycles(l.done_mem - l.add_mem) + PORT_CYCLES <= edge_;
}

bool AxiSlave::beat_ready(const Burst& b, i64 beat) const {
    for (int k : b.beat_lines[beat])
        if (!line_ready(b.lines[k])) return false;
    return true;
}

AxiSlave::Burst* AxiSlave::next_read() {
    if (sending_) return beat_ready(*sending_, sending_->next_beat) ? sending_ : nullptr;
    Burst* best = nullptr;
    for (auto& [id, q] : reads_)
        if (!q.empty() && beat_ready(*q.front(), 0) && (!best || q.front()->accept_edge < best->accept_edge))
            best = q.front();
    sending_ = best;
    return best;
}

AxiSlave::Burst* AxiSlave::next_write_response() {
    Burst* best = nullptr;
    for (auto& [id, q] : writes_) {
        if (q.empty()) continue;
        Burst* b = q.front();
        if (b->next_beat != b->len || (best && b->accept_edge >= best->accept_edge)) continue;
        bool ready = true;
        for (auto& l : b->lines) ready = ready && line_ready(l);
        if (ready) best = b;
    }
    return best;
}

void AxiSlave::retire(std::map<i64, std::deque<Burst*>>& table, Burst* b) {
    table[b->id].pop_front();
    in_flight_ -= 1;
    // bursts retire roughly in order; free those at the front that are finished
    auto finished = [this](const std::unique_ptr<Burst>& x) {
        auto& t = x->write ? writes_ : reads_;
        auto& q = t[x->id];
        return std::find(q.begin(), q.end(), x.get()) == q.end();
    };
    while (!bursts_.empty() && finished(bursts_.front())) bursts_.pop_front();
}

void AxiSlave::compute_outputs() {
    for (const Completion& c : engine_.completions()) {
        auto it = waiting_.find(c.tag);
        it->second->done_mem = c.cycle;
        if (log_) std::fprintf(log_, "C %llu %lld\n", (unsigned long long)c.tag, (long long)c.cycle);
        waiting_.erase(it);
    }
    engine_.completions().clear();
    out_.ar_ready = out_.aw_ready = in_flight_ < p_.max_bursts;
    out_.w_ready = !w_order_.empty();
    Burst* r = next_read();
    out_.r_valid = r != nullptr;
    std::fill(out_.r_data.begin(), out_.r_data.end(), 0);
    if (r) {
        i64 addr, lo, hi;
        beat_lanes(*r, r->next_beat, addr, lo, hi);
        i64 base = addr - addr % p_.word_bytes;
        for (int k : r->beat_lines[r->next_beat]) {
            const Line& l = r->lines[k];
            for (i64 lane = lo; lane <= hi; lane++) {
                i64 byte = base + lane;
                if (byte >= l.line && byte < l.line + line_bytes_) out_.r_data[lane] = l.data[byte - l.line];
            }
        }
        out_.r_id = r->id;
        out_.r_last = r->next_beat == r->len - 1;
        out_.r_resp = 0;
    }
    Burst* b = b_offered_ = next_write_response();
    out_.b_valid = b != nullptr;
    out_.b_id = b ? b->id : 0;
    out_.b_resp = 0;
}

bool AxiSlave::tick(const AxiInputs& in) {
    if (in.reset) {
        out_ = AxiOutputs();
        out_.r_data.assign((size_t)p_.word_bytes, 0);
        return true;
    }
    // handshakes of this edge, offered by the outputs of the previous tick
    if (out_.r_valid && in.r_ready) {
        Burst* r = sending_;
        r->next_beat += 1;
        if (r->next_beat == r->len) {
            sending_ = nullptr;
            retire(reads_, r);
        }
    }
    if (out_.b_valid && in.b_ready) retire(writes_, b_offered_);
    if (out_.ar_ready && in.ar_valid && !accept(false, in.ar_addr, in.ar_id, in.ar_size, in.ar_len)) return false;
    if (out_.aw_ready && in.aw_valid && !accept(true, in.aw_addr, in.aw_id, in.aw_size, in.aw_len)) return false;
    if (out_.w_ready && in.w_valid) {
        Burst* b = w_order_.front();
        bool last = b->next_beat == b->len - 1;
        if (in.w_last != last) {
            error_ = "WLAST = " + std::to_string(in.w_last) + " on beat " + std::to_string(b->next_beat) + " of " +
                     std::to_string(b->len) + " of AW id " + std::to_string(b->id) +
                     "; WLAST marks the last beat only";
            return false;
        }
        write_beat(in);
    }
    issue_lines();
    edge_ += 1;  // from here on, the edge the outputs are for
    engine_.run_until(memory_cycles(edge_));
    compute_outputs();
    return true;
}

}  // namespace memsim
