"""Build workspace packages as wheels and install them alone into fresh virtual environments.

torch is several GB and is never downloaded again for these: each fresh venv sees the dev environment's torch
(and only torch with its own requirements) through a `.pth` file pointing at a folder of links, the same effect
as `--system-site-packages` for torch alone. Everything else comes from pip's cache or the indexes, resolved
for each package alone, as `pip install packages/<name>` would.

A workspace wheel is built once (by its own PEP 517 backend, in the dev environment when that already has a
backend satisfying `build-system.requires`, else in pip's isolated build) and cached under `.cache/tests/`
by the content hash of what goes into it, shared by every test process. The fresh venvs have no pip of their
own: the dev environment's pip installs into them (`pip --python`), which saves `ensurepip`, and it skips
compiling byte code (`--no-compile`; what is imported compiles on import), the bulk of an install's time.
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
    """Build one wheel with pip's isolated build (the package's own build backend, installed afresh)."""
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


def _build_system(folder: Path) -> tuple[str, list[str]]:
    table = tomllib.loads((folder / "pyproject.toml").read_text()).get("build-system", {})
    return table.get("build-backend", "setuptools.build_meta:__legacy__"), table.get("requires", [])


def dev_env_backend(folder: Path) -> str | None:
    """`name==version ...` of the dev environment's build requirements when they satisfy the package's
    `build-system.requires` (then it builds without an isolated environment); None when one is missing."""
    from packaging.requirements import Requirement

    pinned = []
    for text in _build_system(folder)[1]:
        req = Requirement(text)
        if req.marker is not None and not req.marker.evaluate():
            continue
        try:
            version = distribution(req.name).version
        except PackageNotFoundError:
            return None
        if not req.specifier.contains(version, prereleases=True):
            return None
        pinned.append(f"{req.name}=={version}")
    return " ".join(sorted(pinned))


_BUILD_HOOK = """
import importlib, sys
module, _, attr = sys.argv[1].partition(":")
backend = importlib.import_module(module)
for part in filter(None, attr.split(".")):
    backend = getattr(backend, part)
print(backend.build_wheel(sys.argv[2]))
"""


def build_wheel_in_dev_env(folder: Path, out: Path) -> Path:
    """Build one wheel by calling the package's PEP 517 backend (`build_wheel`) from the dev environment."""
    backend = _build_system(folder)[0]
    run = subprocess.run(
        [sys.executable, "-c", _BUILD_HOOK, backend, str(out)], cwd=folder, capture_output=True, text=True
    )
    if run.returncode != 0:
        raise AssertionError(f"building a wheel of {folder} with {backend} failed:\n{run.stderr[-3000:]}")
    return out / run.stdout.strip().splitlines()[-1]


def wheel_inputs(folder: Path) -> list[Path]:
    """What a package's wheel is built from: pyproject.toml, its readme and licence files, and the folders and
    files `[tool.poetry]` packages and includes (the cache key of its wheel hashes these)."""
    pyproject = tomllib.loads((folder / "pyproject.toml").read_text())
    inputs = [folder / "pyproject.toml"]
    readme = pyproject.get("project", {}).get("readme")
    readme = readme.get("file") if isinstance(readme, dict) else readme
    if readme:
        inputs.append(folder / readme)
    licence = re.compile(r"(LICEN[CS]E|COPYING|NOTICE|AUTHORS)", re.IGNORECASE)
    inputs += sorted(p for p in folder.iterdir() if p.is_file() and licence.match(p.name))
    poetry = pyproject.get("tool", {}).get("poetry", {})
    for package in poetry.get("packages", []):
        inputs += sorted((folder / package.get("from", ".")).glob(package["include"]))
    for include in poetry.get("include", []):
        pattern = include["path"] if isinstance(include, dict) else include
        inputs += sorted(folder.glob(pattern))
    if not poetry.get("packages"):  # another backend: everything in the folder
        inputs = [folder]
    return [p for p in dict.fromkeys(inputs) if p.exists()]


def cached_wheel(folder: Path) -> Path:
    """The package's wheel, built at most once for its current sources (cached under `.cache/tests/`)."""
    from artifact_cache import cached_artifact, content_hash

    name = project_metadata(folder)["name"]
    backend = dev_env_backend(folder)
    label = f"backend: {_build_system(folder)[0]} from {backend if backend is not None else 'an isolated build'}"
    for attempt in range(3):  # a file another test writes beside the sources may vanish while it is hashed
        try:
            key = content_hash("workspace-wheel-v1", folder.name, label, *wheel_inputs(folder))
            break
        except FileNotFoundError:
            if attempt == 2:
                raise

    def build(out: Path) -> None:
        if backend is not None:
            build_wheel_in_dev_env(folder, out)
        else:
            build_wheel(folder, out)

    built = cached_artifact(f"wheel-{name}", key, build)
    return next(built.glob("*.whl"))


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
    """A new virtual environment at `path`, without pip (`venv_pip` runs the dev environment's pip on it);
    returns its python."""
    venv.EnvBuilder(with_pip=False, clear=True).create(path)
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


def venv_pip(python: Path, *args: str) -> subprocess.CompletedProcess:
    """Run the dev environment's pip on the environment of `python` (`pip --python`; the venv needs no pip)."""
    env = {**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    return subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), *args], capture_output=True, text=True, env=env
    )


def pip_install(python: Path, wheels: list[Path], wheelhouse: Path) -> subprocess.CompletedProcess:
    """Install wheels into `python`'s venv: their PyPI dependencies resolved by pip from its cache and the indexes,
    siblings from the wheelhouse; no byte-code compilation (modules compile when imported)."""
    options = ["-q", "--no-compile", "--no-warn-script-location", "--find-links", str(wheelhouse)]
    return venv_pip(python, "install", *options, *map(str, wheels))
