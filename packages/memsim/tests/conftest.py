"""Shared fixtures: where DRAMSim3's reference runs live (beside the checkout, as in CI)."""

from pathlib import Path

import pytest

REFERENCE = Path(__file__).resolve().parents[3].parent / "shared" / "reference" / "dramsim3"


@pytest.fixture
def reference_dir() -> Path:
    if not (REFERENCE / "index.json").is_file():
        pytest.skip(f"DRAMSim3 reference data not found at {REFERENCE} (../shared/reference/dramsim3 beside the repo)")
    return REFERENCE
