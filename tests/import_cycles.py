"""Import cycles among one package's modules, read from the sources (ast; nothing is imported).

Every `import` and `from ... import` counts, at module level and inside functions, except those under
`if TYPE_CHECKING:` (they never run). `from pkg import name` is an import of `pkg.name` when that is a
module, else of `pkg`. Importing `a.b` also runs `a/__init__.py`, but that edge is left out (as grimp and
import-linter do): a package `__init__` re-exporting its submodules would otherwise close a loop with each.
"""

import ast
from pathlib import Path


def module_names(src: Path, package: str) -> dict[str, Path]:
    """Module name -> file, for every .py file of `package` under `src`."""
    modules = {}
    for path in sorted((src / package).rglob("*.py")):
        parts = list(path.relative_to(src).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        modules[".".join(parts)] = path
    return modules


def _type_checking_only(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(tree: ast.AST) -> list[ast.Import | ast.ImportFrom]:
    found: list[ast.Import | ast.ImportFrom] = []
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.If) and _type_checking_only(node):
            stack.extend(node.orelse)
            continue
        if isinstance(node, ast.Import | ast.ImportFrom):
            found.append(node)
        stack.extend(ast.iter_child_nodes(node))
    return found


def import_graph(src: Path, package: str) -> dict[str, set[str]]:
    """Module -> the package's modules it imports (anywhere in its body, TYPE_CHECKING blocks excluded)."""
    modules = module_names(src, package)
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        is_package = path.name == "__init__.py"
        here = name.split(".") if is_package else name.split(".")[:-1]
        targets = set()
        for node in _imports(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.Import):
                targets.update(alias.name for alias in node.names)
                continue
            base = node.module or ""
            if node.level:
                anchor = here[: len(here) - node.level + 1]
                base = ".".join([*anchor, *([base] if base else [])])
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                targets.add(sub if sub in modules else base)
        graph[name] = {t for t in targets if t in modules and t != name}
    return graph


def import_cycles(src: Path, package: str) -> list[list[str]]:
    """Every strongly connected group of more than one module (each a cycle, or several), sorted."""
    graph = import_graph(src, package)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    groups: list[list[str]] = []

    def visit(node: str) -> None:  # Tarjan's algorithm
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph[node]):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(groups)


def assert_no_import_cycles(src: Path, package: str) -> None:
    """The test every package's import-cycle check makes: no cycle, each one found named in the message."""
    cycles = import_cycles(src, package)
    assert cycles == [], "import cycles (imports inside functions count; TYPE_CHECKING ones do not): " + "; ".join(
        " <-> ".join(group) for group in cycles
    )
