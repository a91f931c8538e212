"""Parse the stdout of nccl-tests and rccl-tests (`all_reduce_perf` ...) into `BenchResult` rows.

Handles the variants seen in the wild: current nccl-tests (`redop`, `root`, `#wrong` columns, `Group`
in device lines, `# Collective test starting: X` markers around each test), rccl-tests (a
`rccl-tests: Version` line, `RCCL version :` / `HIP version :` header lines, the "Errors with
asterisks" footer), early nccl-tests (no redop/root, a float `error` column instead of `#wrong`),
`N/A` in #wrong for in-place runs that are not checked, NCCL INFO log lines and mpirun
`--tag-output` prefixes interleaved with the table. Each table row yields two results: out-of-place
and in-place.
"""

import math
import re
from dataclasses import dataclass, field
from pathlib import Path

from collbench.errors import CollbenchError
from collbench.schema import BenchResult

# nccl-tests binary stem -> collbench collective name
BINARY_COLLECTIVES = {
    "all_reduce": "all_reduce",
    "all_gather": "all_gather",
    "reduce_scatter": "reduce_scatter",
    "alltoall": "all_to_all",
    "broadcast": "broadcast",
    "reduce": "reduce",
    "sendrecv": "sendrecv",
    "gather": "gather",
    "scatter": "scatter",
}
# nccl-tests type names -> torch dtype names
TYPE_NAMES = {
    "float": "float32",
    "half": "float16",
    "bfloat16": "bfloat16",
    "double": "float64",
    "int8": "int8",
    "uint8": "uint8",
    "int32": "int32",
    "uint32": "uint32",
    "int64": "int64",
    "uint64": "uint64",
    "int": "int32",
    "fp8_e4m3": "float8_e4m3fn",
    "fp8_e5m2": "float8_e5m2",
}

_TAG_PREFIX = re.compile(r"^\[\d+,\d+\]<(?:stdout|stderr)>:\s?")
_START = re.compile(r"#\s*Collective test starting:\s*(\S+)")
_CONCLUDED = re.compile(r"#\s*Collective test concluded")
_RANK = re.compile(
    r"^#\s*Rank\s+(\d+)\s+(?:Group\s+\d+\s+)?Pid\s+\d+\s+on\s+(\S+)\s+device\s+\d+\s+\[[^\]]*\]\s+(.+?)\s*$"
)
_AVG_BUSBW = re.compile(r"#\s*Avg bus bandwidth\s*:\s*([0-9.eE+-]+|nan|-?inf)")
_OOB = re.compile(r"#\s*Out of bounds values\s*:\s*(\d+)")
_RCCL = re.compile(r"rccl-tests: Version|RCCL version\s*:|Librccl path", re.IGNORECASE)


@dataclass
class ParsedTest:
    """One test (one binary's table) from a log."""

    collective: str
    tool: str
    n_ranks: int
    devices: list[str] = field(default_factory=list)
    hosts: list[str] = field(default_factory=list)
    results: list[BenchResult] = field(default_factory=list)
    avg_busbw_gbps: float = math.nan
    out_of_bounds: int = -1


def _is_number(token: str) -> bool:
    try:
        float(token)
    except ValueError:
        return False
    return True


def _header_columns(line: str) -> list[str] | None:
    tokens = line.lstrip("#").split()
    if "size" in tokens and "count" in tokens and "time" in tokens and "busbw" in tokens:
        return tokens
    return None


def _inferred_columns(n_tokens: int) -> list[str] | None:
    """Columns of a headerless row: 3-5 leading columns, then one or two groups of 4."""
    for groups in (2, 1):
        prefix = n_tokens - 4 * groups
        if prefix in (3, 4, 5):
            lead = ["size", "count", "type", "redop", "root"][:prefix]
            return lead + ["time", "algbw", "busbw", "#wrong"] * groups
    return None


class _Section:
    def __init__(self, collective: str | None) -> None:
        self.collective = collective
        self.ranks: dict[int, tuple[str, str]] = {}
        self.columns: list[str] | None = None
        self.rows: list[list[str]] = []
        self.avg_busbw = math.nan
        self.oob = -1
        self.rccl = False

    @property
    def empty(self) -> bool:
        return not self.rows


def _clean(line: str) -> str:
    return _TAG_PREFIX.sub("", line.rstrip("\n")).strip()


def _split_sections(text: str, collective_hint: str | None) -> list[_Section]:
    sections = [_Section(collective_hint)]
    for raw in text.splitlines():
        line = _clean(raw)
        if not line:
            continue
        if m := _START.search(line):
            if not sections[-1].empty or sections[-1].ranks:
                sections.append(_Section(collective_hint))
            sections[-1].collective = _collective_from_binary(m.group(1)) or collective_hint
            continue
        cur = sections[-1]
        if _RCCL.search(line):
            cur.rccl = True
        if line.startswith("# nThread") and (not cur.empty):
            sections.append(_Section(collective_hint))  # a second run concatenated without markers
            cur = sections[-1]
        if m := _RANK.match(line):
            cur.ranks[int(m.group(1))] = (m.group(2), m.group(3))
        elif cols := _header_columns(line):
            cur.columns = cols
        elif m := _AVG_BUSBW.search(line):
            cur.avg_busbw = float(m.group(1))
        elif m := _OOB.search(line):
            cur.oob = int(m.group(1))
        elif _CONCLUDED.search(line):
            sections.append(_Section(collective_hint))
        elif not line.startswith("#"):
            tokens = line.split()
            if len(tokens) >= 7 and tokens[0].isdigit() and tokens[1].isdigit() and not _is_number(tokens[2]):
                cur.rows.append(tokens)
    return [s for s in sections if not s.empty]


def _collective_from_binary(name: str) -> str | None:
    stem = Path(name).name.removesuffix("_mpi").removesuffix("_perf")
    return BINARY_COLLECTIVES.get(stem)


def _wrong(token: str) -> tuple[int, float]:
    """(#wrong, max error) from a #wrong cell or an early nccl-tests error magnitude."""
    if token.upper() == "N/A":
        return -1, math.nan
    if token.isdigit():
        return int(token), math.nan
    cleaned = token.rstrip("*")
    return -1, float(cleaned) if _is_number(cleaned) else math.nan


def _rows_to_results(
    section: _Section, collective: str, tool: str, n_ranks: int, device: str, host: str
) -> list[BenchResult]:
    results: list[BenchResult] = []
    for tokens in section.rows:
        columns = (
            section.columns
            if section.columns and len(section.columns) == len(tokens)
            else _inferred_columns(len(tokens))
        )
        if columns is None:
            raise CollbenchError(
                f"cannot match a {len(tokens)}-column row to the table header {section.columns}: {' '.join(tokens)}"
            )
        first_time = columns.index("time")
        lead = dict(zip(columns[:first_time], tokens[:first_time], strict=True))
        groups = [tokens[i : i + 4] for i in range(first_time, len(tokens), 4)]
        for in_place, (time_us, algbw, busbw, wrong_cell) in zip((False, True), groups, strict=False):
            wrong, max_err = _wrong(wrong_cell)
            results.append(
                BenchResult(
                    collective=collective,
                    backend="rccl" if tool == "rccl-tests" else "nccl",
                    dtype=TYPE_NAMES.get(lead["type"], lead["type"]),
                    size_bytes=int(lead["size"]),
                    count=int(lead["count"]),
                    n_ranks=n_ranks,
                    time_us=_float(time_us),
                    algbw_gbps=_float(algbw),
                    busbw_gbps=_float(busbw),
                    wrong=wrong,
                    in_place=in_place,
                    max_rel_error=max_err,
                    tool=tool,
                    host=host,
                    device=device,
                )
            )
    return results


def _float(token: str) -> float:
    return float(token) if _is_number(token) else math.nan


def parse_nccl_tests(text: str, collective: str | None = None, n_ranks: int | None = None) -> list[ParsedTest]:
    """Every test table in an nccl-tests/rccl-tests log; `collective`/`n_ranks` fill what the log omits."""
    sections = _split_sections(text, collective)
    if not sections:
        raise CollbenchError(
            "no nccl-tests result rows found; expected lines like "
            "'   8388608   2097152   float   sum   -1   84.78   98.95  173.16   0 ...'"
        )
    tests = []
    for sec in sections:
        name = sec.collective or "unknown"
        tool = "rccl-tests" if sec.rccl else "nccl-tests"
        ranks = len(sec.ranks) or n_ranks or 0
        devices = [dev for _host, dev in sec.ranks.values()]
        hosts = sorted({host for host, _dev in sec.ranks.values()})
        device = devices[0] if devices and len(set(devices)) == 1 else ";".join(sorted(set(devices)))
        test = ParsedTest(
            collective=name,
            tool=tool,
            n_ranks=ranks,
            devices=devices,
            hosts=hosts,
            avg_busbw_gbps=sec.avg_busbw,
            out_of_bounds=sec.oob,
        )
        test.results = _rows_to_results(sec, name, tool, ranks, device, ",".join(hosts))
        tests.append(test)
    return tests


def parse_nccl_tests_file(path: Path, collective: str | None = None, n_ranks: int | None = None) -> list[ParsedTest]:
    """`parse_nccl_tests` on a file; the collective defaults to one named in the file name (all_reduce_perf.log)."""
    path = Path(path)
    if not path.is_file():
        raise CollbenchError(f"no such file: {path}")
    if collective is None:
        flat = path.name.replace("_", "").replace("-", "").lower()
        for stem, name in sorted(BINARY_COLLECTIVES.items(), key=lambda kv: -len(kv[0])):
            if stem.replace("_", "") in flat:
                collective = name
                break
    return parse_nccl_tests(path.read_text(errors="replace"), collective=collective, n_ranks=n_ranks)
