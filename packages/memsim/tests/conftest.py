"""Shared fixtures: where DRAMSim3's reference runs live (beside the checkout, as in CI)."""

from pathlib import Path

import pytest

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
