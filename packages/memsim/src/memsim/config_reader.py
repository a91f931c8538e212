"""Typed values from config sections, read as DRAMSim3 reads them, with every default and problem noted.

DRAMSim3 reads numbers with strtol/strtod (a leading number, the rest ignored; base 0, so `0x10` is 16 and
`010` is 8), booleans as true/yes/on/1 or false/no/off/0, and names case-insensitively; a key that is
missing, empty or unreadable takes its default. `ConfigReader` does the same and records a `ConfigNotice`
for each default that matters, each unreadable or misspelt value, each unknown key or section, and each
key given twice, so that `memsim.config_report` can report them (or refuse them with strict).
"""

import difflib
import math
import re
from collections.abc import Mapping
from typing import Any

from memsim.config_keys import KEYS, NOT_MODELLED, NOT_MODELLED_SECTIONS, SUGGESTIONS, Key, KeyContext, find_key
from memsim.config_report import DEFAULT, IGNORED, PROBLEM, ConfigNotice
from memsim.errors import MemsimError

_STRTOL = re.compile(r"\s*([+-]?)(0[xX][0-9a-fA-F]+|0[0-7]*|[1-9][0-9]*)")
_STRTOD = re.compile(r"\s*([+-]?(?:(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?|inf(?:inity)?|nan))", re.IGNORECASE)
_TRUE, _FALSE = ("true", "yes", "on", "1"), ("false", "no", "off", "0")


def strtol(text: str) -> int | None:
    """C's strtol(text, &end, 0): the leading integer, or None when there is none."""
    match = _STRTOL.match(text)
    if match is None:
        return None
    sign, digits = match.groups()
    if digits[:2] in ("0x", "0X"):
        value = int(digits, 16)
    elif digits.startswith("0"):
        value = int(digits, 8)
    else:
        value = int(digits)
    return -value if sign == "-" else value


def strtod(text: str) -> float | None:
    """C's strtod: the leading decimal number (or inf/nan), or None when there is none."""
    match = _STRTOD.match(text)
    return None if match is None else float(match.group(1))


def _as_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


class ConfigReader:
    """Reads one config's sections (an ini file's or a mapping's) key by key, noting what it finds."""

    def __init__(self, sections: Mapping[str, Any], source: str, lines: Mapping[tuple[str, str], int] | None = None,
                 duplicates: bool = True) -> None:  # fmt: skip
        self.source = source
        self.notices: list[ConfigNotice] = []
        self._lines = {(s.lower(), k.lower()): n for (s, k), n in (lines or {}).items()}
        self._values: dict[str, dict[str, tuple[str, Any]]] = {}
        self._section_names: dict[str, str] = {}
        self._defaulted: list[tuple[Key, str, str]] = []  # (key, section, "not set" | "empty")
        for section, values in sections.items():
            if not isinstance(values, Mapping):
                continue  # e.g. the `name` entry of a preset
            self._section_names.setdefault(section.lower(), section)
            store = self._values.setdefault(section.lower(), {})
            for name, value in values.items():
                name = str(name)
                if duplicates and isinstance(value, str) and "\n" in value:
                    self.problem(section, name, f"is set more than once ({value.replace(chr(10), ', ')}); "
                                 "DRAMSim3 reads the first number of the joined values")  # fmt: skip
                store[name.lower()] = (name, value)

    def line(self, section: str, name: str) -> int | None:
        return self._lines.get((section.lower(), name.lower()))

    def problem(self, section: str, name: str, message: str) -> None:
        self.notices.append(ConfigNotice(PROBLEM, self.source, section, name, message, self.line(section, name)))

    def raw(self, section: str, name: str) -> tuple[bool, Any]:
        """(present, value as given)."""
        found = self._values.get(section.lower(), {}).get(name.lower())
        return (False, None) if found is None else (True, found[1])

    def has(self, section: str, name: str) -> bool:
        """The key is given with a non-empty value."""
        present, value = self.raw(section, name)
        return present and _as_text(value).strip() != ""

    def get(self, section: str, name: str) -> Any:
        """The value DRAMSim3 would use for this key: given, or its default (noted) when missing or unreadable."""
        key = find_key(section, name)
        if key is None:
            raise KeyError(f"[{section}] {name} is not a registered key")
        present, value = self.raw(section, key.name)
        text = _as_text(value)
        if not present or text.strip() == "":
            self._defaulted.append((key, section, "not set" if not present else "empty"))
            return key.default
        if key.kind == "int":
            if isinstance(value, bool):
                return int(value)
            if isinstance(value, int):
                return value
            number = strtol(text)
        elif key.kind == "float":
            if isinstance(value, int | float) and not isinstance(value, bool):
                return float(value)
            number = strtod(text)
        elif key.kind == "bool":
            if isinstance(value, bool):
                return value
            low = text.lower()
            number = True if low in _TRUE else False if low in _FALSE else None
        else:
            return text
        if number is None or (isinstance(number, float) and math.isnan(number)):
            kind = {"int": "an integer", "float": "a number", "bool": "true or false"}[key.kind]
            self.problem(section, key.name, f"= {text!r} is not {kind}; DRAMSim3 ignores it and uses its default "
                         f"{key.default}")  # fmt: skip
            return key.default
        return number

    def choice(self, section: str, name: str, fallback: str | None) -> str:
        """A value from the key's choices; a misspelt one is an error, or (fallback given) DRAMSim3's reading of it."""
        key = find_key(section, name)
        assert key is not None and key.choices
        value = self.get(section, name)
        if value in key.choices or (value == key.default and value == ""):
            return value
        hint = difflib.get_close_matches(str(value).upper(), [c.upper() for c in key.choices], n=1, cutoff=0.6)
        mean = f" (did you mean {key.choices[[c.upper() for c in key.choices].index(hint[0])]}?)" if hint else ""
        allowed = ", ".join(key.choices)
        if fallback is None:
            raise MemsimError(f"config {self.source}: [{section}] {key.name} = {value!r} is not allowed{mean}; "
                              f"allowed: {allowed}")  # fmt: skip
        self.problem(section, key.name, f"= {value!r} is not one of {allowed}{mean}; DRAMSim3 reads it as "
                     f"{fallback}, and so does memsim")  # fmt: skip
        return fallback

    def check_names(self) -> None:
        """Note every section and key that is not read: known but not modelled, or unknown (with a hint)."""
        for sec_low, values in self._values.items():
            section = self._section_names[sec_low]
            if sec_low in NOT_MODELLED_SECTIONS:
                self.notices.append(ConfigNotice(IGNORED, self.source, section, "", "not modelled, ignored",
                                                 value=NOT_MODELLED_SECTIONS[sec_low]))  # fmt: skip
                continue
            if sec_low not in KEYS:
                known = sorted(KEYS) + sorted(NOT_MODELLED_SECTIONS)
                hint = difflib.get_close_matches(sec_low.strip(), known, n=1)
                mean = f"did you mean [{hint[0]}]? " if hint else ""
                self.problem(section, "", f"is not a section DRAMSim3 reads, so its keys are ignored; {mean}"
                             f"sections: {', '.join(f'[{s}]' for s in known)}")  # fmt: skip
                continue
            ignored = {n.lower(): why for n, why in NOT_MODELLED.get(sec_low, {}).items()}
            for low, (name, _) in values.items():
                if find_key(section, name) is not None:
                    continue
                if low in ignored:
                    self.notices.append(ConfigNotice(IGNORED, self.source, section, name, "not modelled, ignored",
                                                     self.line(section, name), value=ignored[low]))  # fmt: skip
                    continue
                names = list(KEYS[sec_low])
                hint = SUGGESTIONS.get(low) or next(iter(difflib.get_close_matches(name, names, n=1, cutoff=0.7)), None)
                if hint:
                    default = KEYS[sec_low][hint].default
                    given = self.has(section, hint)
                    used = "" if given else f"; DRAMSim3 then uses {hint}'s default {default}"
                    self.problem(section, name, f"is not a key DRAMSim3 reads (did you mean {hint}?): ignored{used}")
                else:
                    self.problem(section, name, f"is not a key DRAMSim3 reads: ignored; keys of [{section}]: "
                                 f"{', '.join(names)}")  # fmt: skip

    def default_notices(self, ctx: KeyContext) -> None:
        """Note the defaults taken for keys that matter to this part (each once), and keys set that do not."""
        seen = set()
        for key, section, why in self._defaulted:
            if key.used is None or not key.used.test(ctx) or (section, key.name) in seen:
                continue
            seen.add((section, key.name))
            self.notices.append(ConfigNotice(DEFAULT, self.source, section, key.name, why,
                                             self.line(section, key.name), value=str(key.default)))  # fmt: skip
        for sec_low, values in self._values.items():
            for name, _ in values.values():
                key = find_key(sec_low, name)
                if key is not None and key.used is not None and key.used.report_unused and not key.used.test(ctx) \
                        and self.has(sec_low, name):  # fmt: skip
                    self.notices.append(
                        ConfigNotice(
                            IGNORED,
                            self.source,
                            self._section_names[sec_low],
                            key.name,
                            f"set but not used ({key.used.why_not})",
                            self.line(sec_low, name),
                        )
                    )
