"""Build workspace packages as wheels and install them alone into fresh virtual environments.

torch is several GB and is never downloaded again for these: each fresh venv sees the dev environment's torch
(and only torch with its own requirements) through a `.pth` file pointing at a folder of links, the same effect
as `--system-site-packages` for torch alone. Everything else comes from pip's cache or the local indexes.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib
import venv
from importlib.metadata import PackageNotFoundError, distribution
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def workspace_projects() -> dict[str, Path]:
    """Distribution name -> folder, for every package under packages/ and tools/."""
    found = {}
    for pyproject in sorted([*REPO.glob("packages/*/pyproject.toml"), *REPO.glob("tools/*/pyproject.toml")]):
        name = tomllib.loads(pyproject.read_text())["project"]["name"]
        found[name] = pyproject.parent
    return found


def project_metadata(folder: Path) -> dict:
    """The `[project]` table of a package's pyproject.toml."""
    return tomllib.loads((folder / "pyproject.toml").read_text())["project"]


def _requirement_name(req: str) -> str:
    return re.split(r"[\s<>=!~;\[(]", req.strip(), maxsplit=1)[0].lower().replace("_", "-")


def internal_closure(name: str, projects: dict[str, Path]) -> list[str]:
    """`name` plus the workspace packages it depends on, transitively (dependencies first)."""
    order: list[str] = []

    def visit(n: str) -> None:
        if n in order:
            return
        for req in project_metadata(projects[n]).get("dependencies", []):
            dep = _requirement_name(req)
            if dep in projects:
                visit(dep)
        order.append(n)

    visit(name)
    return order


def build_wheel(folder: Path, wheelhouse: Path) -> Path:
    """Build one wheel with the package's own build backend (isolated build, poetry-core)."""
    before = set(wheelhouse.glob("*.whl"))
    run = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(wheelhouse), str(folder)],
        capture_output=True,
        text=True,
    )
    if run.returncode != 0:
        raise AssertionError(f"building a wheel of {folder} failed:\n{run.stderr[-3000:]}")
    new = set(wheelhouse.glob("*.whl")) - before
    stem = project_metadata(folder)["name"].replace("-", "_")
    return next(iter(new)) if new else next(wheelhouse.glob(f"{stem}-*.whl"))


def _torch_closure() -> list[str]:
    names, todo = [], ["torch"]
    while todo:
        n = todo.pop()
        if n in names:
            continue
        try:
            dist = distribution(n)
        except PackageNotFoundError:
            continue
        names.append(n)
        todo += [_requirement_name(r) for r in dist.requires or [] if "extra ==" not in r]
    return names


def torch_link_dir(target: Path) -> Path | None:
    """A folder of links to the dev environment's torch and its requirements; None without torch."""
    try:
        distribution("torch")
    except PackageNotFoundError:
        return None
    target.mkdir(parents=True, exist_ok=True)
    for name in _torch_closure():
        dist = distribution(name)
        top_files = {Path(str(f)).parts[0] for f in dist.files or []}
        for top in top_files:
            src = Path(dist.locate_file(top))
            link = target / top
            if src.exists() and not link.exists() and top != "..":
                link.symlink_to(src)
    return target


def fresh_venv(path: Path, torch_links: Path | None) -> Path:
    """A new virtual environment (with pip) at `path`; returns its python."""
    venv.EnvBuilder(with_pip=True, clear=True).create(path)
    python = path / "bin" / "python"
    if torch_links is not None:
        site = subprocess.run(
            [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()
        (Path(site) / "zaya-torch-from-dev-env.pth").write_text(f"{torch_links}\n")
    return python


def pip_install(python: Path, wheels: list[Path], wheelhouse: Path) -> subprocess.CompletedProcess:
    """Install wheels (their PyPI dependencies from pip's cache / indexes, siblings from the wheelhouse)."""
    env = {**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    return subprocess.run(
        [python, "-m", "pip", "install", "-q", "--find-links", str(wheelhouse), *map(str, wheels)],
        capture_output=True,
        text=True,
        env=env,
    )
