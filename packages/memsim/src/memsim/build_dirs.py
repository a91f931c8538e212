"""Where memsim keeps the things it builds (Verilator models, the native libraries, the SimDRAM test bench).

Every build is named by a hash of what it is built from and made under a lock, so a stale build is never used
and concurrent processes build it once. By default the builds of `zaya memsim rtl verify`, `NativeEngine` and
`NativeAxiSlave` go to per-user temporary folders, and a command given an output folder builds there.
`MEMSIM_BUILD_CACHE=DIR` puts every build under DIR instead, shared by every process that sets it (test workers
and the commands the tests run): a library an output folder must hold is copied there from DIR, and the SimDRAM
test bench runs from DIR.
"""

import os
import tempfile
from pathlib import Path

ENV = "MEMSIM_BUILD_CACHE"


def build_cache() -> Path | None:
    """The shared build folder `$MEMSIM_BUILD_CACHE`, or None when it is not set."""
    value = os.environ.get(ENV)
    return Path(value) if value else None


def default_build_dir(kind: str) -> Path:
    """The default folder of one kind of build: `$MEMSIM_BUILD_CACHE/<kind>`, else `<tmp>/memsim-<kind>`."""
    cache = build_cache()
    return cache / kind if cache is not None else Path(tempfile.gettempdir()) / f"memsim-{kind}"
