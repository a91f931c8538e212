"""Shared fixtures: where DRAMSim3's reference runs live (beside the checkout, as in CI), and one build cache.

Every memsim build of the session (Verilator models of the generated RTL, Verilator's runtime objects, the native
libraries, the SimDRAM test bench) goes to `<test cache>/memsim-builds` (`MEMSIM_BUILD_CACHE`, which the commands
the tests run inherit), each named by a hash of what it is built from: a test worker or command that needs a
build another one made reuses it, and a changed source makes a new one.
"""

import os
from pathlib import Path

import pytest
from artifact_cache import cache_root

os.environ.setdefault("MEMSIM_BUILD_CACHE", str(cache_root() / "memsim-builds"))

SHARED = Path(__file__).resolve().parents[3].parent / "shared" / "reference"
REFERENCE = SHARED / "dramsim3"
SHIPPED = SHARED / "dramsim3-configs"  # every config DRAMSim3 ships, with a streaming run on each


@pytest.fixture
def reference_dir() -> Path:
    if not (REFERENCE / "index.json").is_file():
        pytest.skip(f"DRAMSim3 reference data not found at {REFERENCE} (../shared/reference/dramsim3 beside the repo)")
    return REFERENCE


@pytest.fixture
def shipped_dir() -> Path:
    if not (SHIPPED / "index.json").is_file():
        pytest.skip(f"DRAMSim3's shipped configs not found at {SHIPPED} (../shared/reference beside the repo)")
    return SHIPPED
