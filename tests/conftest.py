"""Fixtures for cross-package tests: a per-worker wheelhouse of every workspace package."""

from pathlib import Path

import pytest
from packaging_helpers import build_wheel, torch_link_dir, workspace_projects


@pytest.fixture(scope="session")
def wheelhouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Folder where workspace wheels are built on demand (once per test process)."""
    return tmp_path_factory.mktemp("wheelhouse")


@pytest.fixture(scope="session")
def torch_links(tmp_path_factory: pytest.TempPathFactory) -> Path | None:
    """Links to the dev environment's torch, shared by every fresh venv of this test process."""
    return torch_link_dir(tmp_path_factory.mktemp("torch-links"))


@pytest.fixture(scope="session")
def built_wheels(wheelhouse: Path) -> dict[str, Path]:
    """Lazily filled map: distribution name -> built wheel."""
    return {}


@pytest.fixture(scope="session")
def wheel_for(wheelhouse: Path, built_wheels: dict[str, Path]):
    """Build (once) and return the wheel of a workspace distribution."""
    projects = workspace_projects()

    def get(name: str) -> Path:
        if name not in built_wheels:
            built_wheels[name] = build_wheel(projects[name], wheelhouse)
        return built_wheels[name]

    return get
