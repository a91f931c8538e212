"""What reading a config noticed: defaults taken, keys ignored, and problems (unknown keys, unreadable or
misspelt values, skipped lines), so that no config is ever read silently.

Problems are warnings by default and errors with `strict=True` (`--strict`); defaults and keys that are known
but not modelled are always reported, never errors. Each notice names the file, the section and the key.
"""

import warnings
from collections.abc import Iterable
from dataclasses import dataclass

from memsim.errors import MemsimError

DEFAULT, IGNORED, PROBLEM = "default", "ignored", "problem"


class MemsimConfigWarning(UserWarning):
    """A config was read with defaults, ignored keys, or (without strict) problems; the message says which."""


@dataclass(frozen=True)
class ConfigNotice:
    """One thing noticed while reading a config."""

    kind: str  # DEFAULT, IGNORED or PROBLEM
    source: str  # file name or config name
    section: str
    key: str
    message: str  # what and why; for defaults "not set" or "empty"
    line: int | None = None
    value: str = ""  # defaults: the value used; ignored keys: why

    def __str__(self) -> str:
        where = f"{self.source}:{self.line}" if self.line else self.source
        place = " ".join(x for x in (f"[{self.section}]" if self.section else "", self.key) if x)
        return f"{where}: {place + ' ' if place else ''}{self.message}"


def summarise(notices: Iterable[ConfigNotice]) -> list[str]:
    """One line per problem; defaults and ignored keys grouped per file, section and reason (each key named)."""
    lines: list[str] = []
    groups: dict[tuple[str, str, str, str], list[str]] = {}
    for n in notices:
        if n.kind == PROBLEM:
            lines.append(str(n))
        elif n.kind == DEFAULT:
            groups.setdefault((n.source, n.section, n.kind, n.message), []).append(f"{n.key} = {n.value}")
        else:
            groups.setdefault((n.source, n.section, n.kind, n.message), []).append(
                f"{n.key} ({n.value})" if n.key and n.value else n.key or n.value
            )
    for (source, section, kind, why), keys in groups.items():
        place = f"[{section}] " if section else ""
        if kind == DEFAULT:
            lines.append(f"{source}: {place}{why}, DRAMSim3's defaults used: {', '.join(keys)}")
        else:
            lines.append(f"{source}: {place}{why}: {', '.join(k for k in keys if k)}".rstrip(": "))
    return lines


def report(notices: list[ConfigNotice], strict: bool, source: str) -> None:
    """Raise on problems when strict; otherwise emit every notice as a MemsimConfigWarning (grouped)."""
    problems = [n for n in notices if n.kind == PROBLEM]
    if strict and problems:
        listed = "; ".join(str(n) for n in problems)
        raise MemsimError(f"config {source} has {len(problems)} problem(s) (strict): {listed}")
    for line in summarise(notices):
        warnings.warn(line, MemsimConfigWarning, stacklevel=3)
