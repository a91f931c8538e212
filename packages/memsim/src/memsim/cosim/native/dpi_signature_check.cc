// Compiled into memsim's SimDRAM test bench: the simulator's DPI header (generated from SimDRAM.sv's imports,
// which are SimDRAM.v's) next to memsim's declarations. A differing argument list or type is a compile error.
#include "Vsimdram_tb__Dpi.h"
#include "memsim_simdram.h"
