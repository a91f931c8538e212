"""collbench: collectives, GEMM and memory-bandwidth microbenchmarks, and hardware-aware sizing rules.

Kept light on import: the GPU benchmark scripts import `collbench.gemm`/`collbench.membw` on machines
without Hydra, so nothing here pulls in zaya_config, torch or zarr.
"""

from collbench.busbw import algbw_gbps, bus_factor, busbw_gbps
from collbench.errors import CollbenchError
from collbench.nccl_parse import ParsedTest, parse_nccl_tests, parse_nccl_tests_file
from collbench.schema import BenchResult
from collbench.sizes import parse_size, size_sweep

__all__ = [
    "BenchResult",
    "CollbenchError",
    "ParsedTest",
    "algbw_gbps",
    "bus_factor",
    "busbw_gbps",
    "parse_nccl_tests",
    "parse_nccl_tests_file",
    "parse_size",
    "size_sweep",
]
