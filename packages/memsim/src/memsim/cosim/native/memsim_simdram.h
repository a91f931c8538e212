// SimDRAM's DPI functions as C declares them (testchipip vsrc/SimDRAM.v): the build of memsim's test harness
// includes this header together with the simulator's generated DPI header, so a signature that differs from
// SimDRAM.v's is a compile error.
#pragma once

#include <svdpi.h>

extern "C" {
void* memory_init(int chip_id, long long mem_size, long long word_size, long long line_size, long long id_bits,
                  long long clock_hz, long long mem_base, int addr_bits);
void memory_tick(void* channel, unsigned char reset, unsigned char ar_valid, unsigned char* ar_ready,
                 long long ar_addr, int ar_id, int ar_size, int ar_len, unsigned char aw_valid,
                 unsigned char* aw_ready, long long aw_addr, int aw_id, int aw_size, int aw_len,
                 unsigned char w_valid, unsigned char* w_ready, int w_strb, const svOpenArrayHandle w_data,
                 unsigned char w_last, unsigned char* r_valid, unsigned char r_ready, int* r_id, int* r_resp,
                 const svOpenArrayHandle r_data, unsigned char* r_last, unsigned char* b_valid,
                 unsigned char b_ready, int* b_id, int* b_resp);
}
