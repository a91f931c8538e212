"""docs/ARCHITECTURE.md stays true: every module path, dotted name and error type it names exists in the tree.

What counts as a name of ours: a backticked token ending in `.py`, or starting with one of our import packages,
`services/`, `tests/`, `tools/` or `packages/`. Run-dir entries (`checkpoints/`, `loss.png`) and config groups
(`hardware/`) are not module paths and are not checked here.
"""

import importlib
import re
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DOC = REPO / "docs" / "ARCHITECTURE.md"
PACKAGES = {p.name: p for p in REPO.glob("packages/*/src/*") if (p / "__init__.py").is_file()}
PACKAGES |= {p.name: p for p in REPO.glob("tools/*/src/*") if (p / "__init__.py").is_file()}
TOP = ("services/", "tests/", "tools/", "packages/", "infra/", "docs/")
TOKEN = re.compile(r"`([^`\n]+)`")


def _prose() -> list[str]:
    """The page's lines outside code fences (the layout tree is prose of its own, checked by eye)."""
    return re.sub(r"```.*?```", "", DOC.read_text(encoding="utf-8"), flags=re.S).splitlines()


def _is_ours(token: str) -> bool:
    return bool(re.fullmatch(r"[\w./-]+", token)) and (
        token.endswith(".py") or token.startswith(TOP) or token.split("/")[0].split(".")[0] in PACKAGES
    )


def _resolve(token: str) -> Path | None:
    """The file or folder a path names: from the repo root, or inside one of our import packages."""
    first, _, rest = token.partition("/")
    candidates = [REPO / token]
    if first in PACKAGES:
        candidates.append(PACKAGES[first] / rest)
    candidates += [package / token for package in PACKAGES.values()]
    return next((path for path in candidates if path.exists()), None)


def _tracked() -> list[Path]:
    names = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True, check=True).stdout
    return [REPO / name for name in names.splitlines()]


def test_every_module_path_it_names_exists():
    named = [t for line in _prose() for t in TOKEN.findall(line) if "/" in t and _is_ours(t)]
    missing = [t for t in named if _resolve(t) is None]
    assert not missing, f"docs/ARCHITECTURE.md names paths that do not exist: {missing}"


def test_every_bare_file_name_is_in_a_folder_its_line_names():
    """`model.py` in "`zaya_model` (`model.py`, ...)": inside a folder the same line names, else anywhere."""
    tracked = _tracked()
    wrong = []
    for line in _prose():
        tokens = TOKEN.findall(line)
        folders = [p if p.is_dir() else p.parent for t in tokens if _is_ours(t) and (p := _resolve(t)) is not None]
        for name in (t for t in tokens if re.fullmatch(r"\w+\.py", t)):
            near = [f for f in folders if any(f.rglob(name))]
            if not near and not any(path.name == name for path in tracked):
                wrong.append(name)
    assert not wrong, f"docs/ARCHITECTURE.md names files that exist nowhere in the tree: {wrong}"


def _dotted() -> list[str]:
    names = {t for line in _prose() for t in TOKEN.findall(line) if re.fullmatch(r"[a-z_]+(\.\w+)+", t)}
    return sorted(n for n in names if n.split(".")[0] in PACKAGES)


@pytest.mark.parametrize("name", _dotted())
def test_every_dotted_name_it_names_imports(name: str):
    """`zaya_config.cli_errors.fail`: the longest importable module prefix, then attributes to the end."""
    parts = name.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ModuleNotFoundError:
            continue
        for attr in parts[cut:]:
            assert hasattr(obj, attr), f"docs/ARCHITECTURE.md names {name}: {'.'.join(parts[:cut])} has no {attr}"
            obj = getattr(obj, attr)
        return
    pytest.fail(f"docs/ARCHITECTURE.md names {name}, which does not import")


def test_every_error_type_it_names_is_defined():
    names = set(re.findall(r"\b([A-Z]\w*Error)\b", "\n".join(_prose())))
    sources = "\n".join(p.read_text(encoding="utf-8") for root in PACKAGES.values() for p in root.rglob("*.py"))
    undefined = sorted(n for n in names if not re.search(rf"^class {n}\b", sources, re.M))
    assert names and not undefined, f"docs/ARCHITECTURE.md names error types that no package defines: {undefined}"
