"""Fixtures for cross-package tests: workspace wheels (built once, cached under `.cache/tests/`) and a per-worker
wheelhouse that holds links to the ones this test process has asked for."""

from pathlib import Path

import pytest
from packaging_helpers import cached_wheel, torch_link_dir, workspace_projects


@pytest.fixture(scope="session")
def wheelhouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Folder of this test process's workspace wheels (links to the cached ones), pip's `--find-links`."""
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
    """The wheel of a workspace distribution: built once for its sources by any test process (the cache), linked
    into this process's wheelhouse."""
    projects = workspace_projects()

    def get(name: str) -> Path:
        if name not in built_wheels:
            wheel = cached_wheel(projects[name])
            link = wheelhouse / wheel.name
            if not link.exists():
                link.symlink_to(wheel)
            built_wheels[name] = link
        return built_wheels[name]

    return get
