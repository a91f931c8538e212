"""Every workspace package builds as a wheel and installs alone (with only its own dependencies)."""

import subprocess
import tomllib

import pytest
from packaging_helpers import fresh_venv, internal_closure, pip_install, venv_pip, workspace_projects

PROJECTS = workspace_projects()


def _import_names(folder) -> list[str]:
    poetry = tomllib.loads((folder / "pyproject.toml").read_text()).get("tool", {}).get("poetry", {})
    return [p["include"] for p in poetry.get("packages", []) if p["include"] != "hydra_plugins"]


def _cli_names(folder) -> list[str]:
    project = tomllib.loads((folder / "pyproject.toml").read_text())["project"]
    return sorted(project.get("entry-points", {}).get("zaya.cli", {}))


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(PROJECTS))
def test_package_installs_alone(name, tmp_path, wheel_for, wheelhouse, torch_links):
    """Fresh venv + this package's wheel (+ zaya-cli for the command): it imports and its commands appear."""
    wanted = internal_closure(name, PROJECTS)
    for extra in internal_closure("zaya-cli", PROJECTS):
        if extra not in wanted:
            wanted.append(extra)
    wheels = [wheel_for(n) for n in wanted]
    python = fresh_venv(tmp_path / "venv", torch_links)
    result = pip_install(python, wheels, wheelhouse)
    assert result.returncode == 0, result.stderr[-3000:]

    listing = venv_pip(python, "list", "--format=freeze")
    assert listing.returncode == 0, listing.stderr[-3000:]
    installed = listing.stdout
    names = {line.split("==")[0].lower() for line in installed.splitlines()}
    assert set(wanted) <= names, f"`pip list` of the fresh venv lacks {set(wanted) - names}:\n{installed}"
    siblings = {n for n in PROJECTS if n not in wanted}
    leaked = [line for line in installed.splitlines() if line.split("==")[0].lower() in siblings]
    assert not leaked, f"{name} pulled in other workspace packages: {leaked}"

    for module in _import_names(PROJECTS[name]):
        run = subprocess.run([python, "-c", f"import {module}"], capture_output=True, text=True)
        assert run.returncode == 0, f"import {module} failed in a fresh venv:\n{run.stderr[-3000:]}"

    help_text = subprocess.run([tmp_path / "venv" / "bin" / "zaya", "--help"], capture_output=True, text=True)
    assert help_text.returncode == 0, help_text.stderr
    assert "cannot load" not in help_text.stderr, help_text.stderr
    for command in _cli_names(PROJECTS[name]):
        assert command in help_text.stdout, f"`zaya {command}` missing from `zaya --help`:\n{help_text.stdout}"
