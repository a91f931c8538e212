"""Loads memsim's C++ engine (`libmemsim_native.so`, built by `memsim.cosim.native_build` with the system's
compiler) with its ctypes signatures, once per process, for trace runs (`memsim.compiled.bridge`), the plain-trace
parser (`memsim.trace`) and requests one by one (`memsim.cosim.native_engine`).
"""

import ctypes
import os
from pathlib import Path

from memsim.build_dirs import default_build_dir
from memsim.errors import MemsimError

_LL, _ULL, _P = ctypes.c_longlong, ctypes.c_ulonglong, ctypes.c_void_p
_PLL = ctypes.POINTER(_LL)
SIGNATURES = {
    "memsim_engine_open": (_P, [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_int]),
    "memsim_engine_close": (None, [_P]),
    "memsim_engine_will_accept": (ctypes.c_int, [_P, _LL, ctypes.c_int]),
    "memsim_engine_add": (None, [_P, _LL, ctypes.c_int, _ULL]),
    "memsim_engine_run_until": (None, [_P, _LL]),
    "memsim_engine_clk": (_LL, [_P]),
    "memsim_engine_completions": (ctypes.c_int, [_P, ctypes.POINTER(_ULL), _PLL, ctypes.c_int]),
    "memsim_engine_log_commands": (None, [_P, ctypes.c_int]),
    "memsim_engine_commands": (_LL, [_P, _PLL, _LL]),
    "memsim_trace_run": (ctypes.c_int, [_PLL, _PLL, _PLL, _PLL, _PLL, _PLL, _PLL, _PLL, _LL, _LL, _PLL]),
    "memsim_parse_plain": (_LL, [ctypes.c_char_p, _LL, _PLL, _PLL, _LL, _PLL, _PLL, _PLL]),
}
_loaded: dict[tuple[str, str], ctypes.CDLL] = {}


def load_library(build_dir: Path | None = None) -> ctypes.CDLL:
    """Build (or reuse) libmemsim_native.so under `build_dir` (default: `memsim.build_dirs.default_build_dir`) and
    load it; a missing compiler or a failed build is a MemsimError that says so."""
    from memsim.cosim.native_build import build_library

    folder = build_dir or default_build_dir("native")
    key = (str(folder), os.environ.get("CXX", ""))
    if key not in _loaded:
        lib = ctypes.CDLL(str(build_library("native", folder)))
        for name, (res, args) in SIGNATURES.items():
            fn = getattr(lib, name)
            fn.restype, fn.argtypes = res, args
        _loaded[key] = lib
    return _loaded[key]


def why_unavailable() -> str | None:
    """None when the C++ engine can be loaded (building it if needed), else why not (one line)."""
    try:
        load_library()
    except MemsimError as err:
        return str(err).splitlines()[0]
    return None


def prebuild() -> tuple[bool, str]:
    """Build the C++ engine now, where trace runs look for it (`make setup` does, through `zaya memsim
    build-engine`): (built, one line saying where, or why not; without it trace runs use the Python engine)."""
    try:
        load_library()
    except MemsimError as err:
        return False, f"memsim: C++ engine not built: {err}; trace runs will use the Python engine"
    return True, f"memsim: C++ engine ready in {default_build_dir('native')}"


def pointer(array) -> "ctypes._Pointer":
    """A C int64 pointer to a C-contiguous int64 numpy array (kept alive by the caller)."""
    if array.dtype.itemsize != 8 or not array.flags.c_contiguous:
        raise MemsimError("memsim's C++ engine takes C-contiguous int64 arrays")
    return array.ctypes.data_as(_PLL)
