"""Shared fixtures: the real nccl-tests/rccl-tests output samples (sources in fixtures/SOURCES.md)."""

from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture
def fixture_path():
    """Path of a fixture file by name."""
    return lambda name: FIXTURES / name
