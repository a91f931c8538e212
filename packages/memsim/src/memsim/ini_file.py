"""Reader for DRAMSim3's `.ini` files, so they load exactly as they are.

DRAMSim3 reads them with inih: `key = value` lines under `[section]` headers, `;` or `#` comments.
Numbers are read as a prefix (strtol), so `tRPRE = 1; read preamble` is 1, as in DRAMSim3.
"""

from pathlib import Path

from memsim.errors import MemsimError

Sections = dict[str, dict[str, str]]


def parse_ini_text(text: str, source: str = "<string>") -> Sections:
    """Parse ini text into {section: {key: raw value}}; a line that is neither names its number."""
    sections: Sections = {}
    current: dict[str, str] | None = None
    for lineno, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line[0] in ";#":
            continue
        if line.startswith("["):
            if not line.endswith("]"):
                raise MemsimError(f"{source}:{lineno}: bad section header {raw!r}; expected '[name]'")
            current = sections.setdefault(line[1:-1].strip(), {})
            continue
        if "=" not in line:
            raise MemsimError(f"{source}:{lineno}: cannot parse {raw!r}; expected 'key = value'")
        if current is None:
            raise MemsimError(f"{source}:{lineno}: {raw!r} comes before any [section] header")
        key, _, value = line.partition("=")
        current[key.strip()] = value.strip()
    return sections


def read_ini(path: str | Path) -> Sections:
    """Read a DRAMSim3 config file; a missing file is a clear error."""
    path = Path(path)
    if not path.is_file():
        raise MemsimError(f"config file {path} does not exist; pass a DRAMSim3 .ini file or a preset name")
    return parse_ini_text(path.read_text(), source=str(path))
