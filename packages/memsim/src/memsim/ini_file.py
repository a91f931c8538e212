"""Reader for DRAMSim3's `.ini` files that follows inih, the parser DRAMSim3 uses, rule for rule.

inih's rules, which decide what DRAMSim3 actually reads from a file:
- `name = value` or `name: value` under `[section]` headers; a line starting with `;` or `#` is a comment;
- an inline comment starts at a `;` that follows whitespace (`protocol = DDR3  ; STT-MRAM` is `DDR3`),
  while `tRPRE = 1; read preamble` keeps `1; read preamble` (numbers are then read as a prefix);
- a non-blank line indented under a `name = value` line continues that value (joined with a newline);
- a name given twice is joined the same way; sections and names are matched without regard to case;
- `[ timing ]` names a section " timing ", which is not `[timing]`;
- lines inih cannot parse are skipped (DRAMSim3 does not check); they are kept here so they can be reported.
"""

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memsim.errors import MemsimError


@dataclass(frozen=True)
class IniEntry:
    """One value as DRAMSim3 reads it: section and name as written, the value after comment stripping."""

    section: str
    name: str
    value: str
    line: int


@dataclass
class IniDocument:
    """A parsed file: its entries in order, and the lines inih skips (line number, text, why)."""

    source: str
    entries: list[IniEntry] = field(default_factory=list)
    skipped: list[tuple[int, str, str]] = field(default_factory=list)

    def sections(self) -> dict[str, dict[str, str]]:
        """{section: {name: value}}, repeated names joined by a newline (as inih); first spelling kept."""
        out: dict[str, dict[str, str]] = {}
        canonical: dict[tuple[str, str], tuple[str, str]] = {}
        for e in self.entries:
            sec_key = e.section.lower()
            section = next((s for s in out if s.lower() == sec_key), e.section)
            values = out.setdefault(section, {})
            known = canonical.get((sec_key, e.name.lower()))
            if known is None:
                canonical[(sec_key, e.name.lower())] = (section, e.name)
                values[e.name] = e.value
            else:
                values[known[1]] += "\n" + e.value
        return out

    def line_of(self, section: str, name: str) -> int | None:
        """Line of the first entry for (section, name), matched without regard to case."""
        for e in self.entries:
            if e.section.lower() == section.lower() and e.name.lower() == name.lower():
                return e.line
        return None


_INLINE_COMMENT = re.compile(r"(?<=\s);")  # a `;` that follows whitespace
_NAME_END = re.compile(r"[=:]|(?<=\s);")


def _comment_start(text: str) -> int:
    """Index of an inline `;` comment (one that follows whitespace), or len(text)."""
    match = _INLINE_COMMENT.search(text)
    return match.start() if match else len(text)


def _split_name(text: str) -> int:
    """Index of the first `=` or `:` before any inline comment, or -1."""
    match = _NAME_END.search(text)
    return match.start() if match and text[match.start()] != ";" else -1


def parse_ini_text(text: str, source: str = "<string>") -> IniDocument:
    """Parse ini text the way inih does; never raises (what inih skips is in `skipped`)."""
    doc = IniDocument(source)
    section = ""
    prev_name = ""
    if text.startswith("\ufeff"):
        text = text[1:]
    for lineno, raw in enumerate(text.splitlines(), start=1):
        stripped = raw.strip()
        indented = stripped != "" and raw[0].isspace()
        if not stripped or stripped[0] in ";#":
            continue
        if prev_name and indented:
            value = stripped[: _comment_start(stripped)].rstrip()
            doc.entries.append(IniEntry(section, prev_name, value, lineno))
            continue
        if stripped[0] == "[":
            body = stripped[1:]
            end = body.find("]")
            comment = _comment_start(body)
            if end < 0 or end > comment:
                doc.skipped.append((lineno, raw, "a section header without its closing ']'"))
                continue
            section = body[:end]
            prev_name = ""
            continue
        end = _split_name(stripped)
        if end < 0:
            doc.skipped.append((lineno, raw, "neither a 'name = value' line, a [section] header nor a comment"))
            continue
        name = stripped[:end].rstrip()
        value = stripped[end + 1 :].lstrip()
        value = value[: _comment_start(value)].rstrip()
        prev_name = name
        doc.entries.append(IniEntry(section, name, value, lineno))
    return doc


def read_ini(path: str | Path) -> IniDocument:
    """Read a DRAMSim3 config file; a missing file is a clear error."""
    path = Path(path)
    if not path.is_file():
        raise MemsimError(f"config file {path} does not exist; pass a DRAMSim3 .ini file or a preset name")
    return parse_ini_text(path.read_text(errors="replace"), source=str(path))


def format_ini(sections: Mapping[str, Any]) -> str:
    """Sections ({section: {key: value}}, e.g. a preset's) as `.ini` text that DRAMSim3 and memsim read alike."""
    out: list[str] = []
    for section, values in sections.items():
        if not isinstance(values, Mapping):
            continue  # e.g. a preset's `name`
        out.append(f"[{section}]")
        for key, value in values.items():
            if value is None:
                continue
            text = str(value).lower() if isinstance(value, bool) else str(value)
            if "\n" in text or ";" in text:
                raise MemsimError(f"[{section}] {key} = {text!r}: a value cannot hold a newline or ';' in an .ini file")
            out.append(f"{key} = {text}")
        out.append("")
    return "\n".join(out)
