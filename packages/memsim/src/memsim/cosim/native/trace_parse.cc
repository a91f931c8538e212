// The parser for plain DRAMSim3 traces (`0xADDR OP CYCLE` lines, nothing else), for memsim.trace.
//
// It accepts a strict subset of what memsim.trace accepts (spaces or tabs between three fields, an optional
// trailing carriage return, no blank or comment lines) and gives up on anything else, so the Python parser,
// which names a bad line, decides every other case.
#include <cstdint>

namespace {
constexpr unsigned char SPACE = 32, TAB = 9, LF = 10, CR = 13;

int64_t skip_blanks(const unsigned char* buf, int64_t n, int64_t i) {
    while (i < n && (buf[i] == SPACE || buf[i] == TAB)) i++;
    return i;
}
}  // namespace

// `codes`: each op name (upper case, at most 8 letters) packed big-endian into one integer, `code_writes`
// whether it writes. Fills addrs / writes / cycles (room for every line); returns the number of lines, or -1
// when the text is not plain.
extern "C" int64_t memsim_parse_plain(const unsigned char* buf, int64_t n, const int64_t* codes,
                                      const int64_t* code_writes, int64_t ncodes, int64_t* addrs, int64_t* writes,
                                      int64_t* cycles) {
    int64_t i = 0, k = 0;
    while (i < n) {
        i = skip_blanks(buf, n, i);
        if (i + 1 < n && buf[i] == '0' && (buf[i + 1] == 'x' || buf[i + 1] == 'X')) i += 2;
        int64_t addr = 0, digits = 0;
        while (i < n) {
            unsigned char c = buf[i];
            int64_t v;
            if (c >= '0' && c <= '9') v = c - '0';
            else if (c >= 'a' && c <= 'f') v = c - 'a' + 10;
            else if (c >= 'A' && c <= 'F') v = c - 'A' + 10;
            else break;
            addr = addr * 16 + v;
            digits++;
            i++;
        }
        int64_t start = i;
        i = skip_blanks(buf, n, i);
        if (digits == 0 || digits > 15 || i == start) return -1;
        int64_t code = 0, letters = 0;
        while (i < n && buf[i] != SPACE && buf[i] != TAB && buf[i] != LF && buf[i] != CR) {
            int64_t c = buf[i];
            if (c >= 'a' && c <= 'z') c -= 32;
            code = code * 256 + c;
            letters++;
            i++;
            if (letters > 8) return -1;
        }
        int64_t match = -1;
        for (int64_t j = 0; j < ncodes; j++)
            if (codes[j] == code) match = j;
        start = i;
        i = skip_blanks(buf, n, i);
        if (match < 0 || i == start) return -1;
        int64_t cycle = 0;
        digits = 0;
        while (i < n && buf[i] >= '0' && buf[i] <= '9') {
            cycle = cycle * 10 + (buf[i] - '0');
            digits++;
            i++;
        }
        if (digits == 0 || digits > 18) return -1;
        i = skip_blanks(buf, n, i);
        if (i < n && buf[i] == CR) i++;
        if (i < n) {
            if (buf[i] != LF) return -1;
            i++;
        }
        addrs[k] = addr;
        writes[k] = code_writes[match];
        cycles[k] = cycle;
        k++;
    }
    return k;
}
