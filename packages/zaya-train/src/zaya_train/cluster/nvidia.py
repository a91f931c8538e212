"""The NVIDIA part of a node's health check: `nvidia-smi` reports no uncorrectable ECC error and sane clocks.

Read from `nvidia-smi --query-gpu=index,ecc.errors.uncorrected.volatile.total,clocks.sm,clocks.max.sm
--format=csv` (QUERY below), which prints a header of the fields' canonical names with their units
(`index, ecc.errors.uncorrected.volatile.total, clocks.current.sm [MHz], clocks.max.sm [MHz]`) and then one
line per GPU (`0, 0, 1980 MHz, 1980 MHz`). Columns are found by the header's names, so their order and any
extra fields do not matter; `nounits` output (bare numbers) and `noheader` output in QUERY's field order are
read too. The parser is tested on outputs in that format (packages/zaya-train/tests/data/nvidia_smi/), since
the test machines have no NVIDIA GPU.
"""

import re
import shutil
import subprocess
from dataclasses import dataclass

FIELDS = ("index", "ecc.errors.uncorrected.volatile.total", "clocks.sm", "clocks.max.sm")
QUERY = ["nvidia-smi", f"--query-gpu={','.join(FIELDS)}", "--format=csv"]
# The header prints a field's canonical name (`clocks.sm` is an alias of `clocks.current.sm`).
ALIASES = {"clocks.current.sm": "clocks.sm"}


@dataclass
class GpuProblem:
    """One GPU that fails the check, and why."""

    index: int
    reason: str


def _name(header_cell: str) -> str:
    """`clocks.current.sm [MHz]` -> `clocks.sm`: the field, without its unit, under QUERY's name."""
    name = re.sub(r"\s*\[.*\]$", "", header_cell.strip())
    return ALIASES.get(name, name)


def _number(cell: str) -> int | None:
    """`1980 MHz` or `1980` -> 1980; `[N/A]`, `[Not Supported]` (ECC off, a field the GPU lacks) -> None."""
    match = re.fullmatch(r"(\d+)(?:\s*[A-Za-z%]+)?", cell.strip())
    return int(match.group(1)) if match else None


def parse_rows(csv_text: str) -> list[dict[str, str]]:
    """One dict per GPU, keyed by QUERY's field names; a missing field is refused by name."""
    lines = [line for line in csv_text.strip().splitlines() if line.strip()]
    if not lines:
        raise ValueError("nvidia-smi printed no GPU")
    first = [c.strip() for c in lines[0].split(",")]
    if first[0].isdigit():  # noheader: QUERY's order
        header, rows = list(FIELDS), lines
    else:
        header, rows = [_name(c) for c in first], lines[1:]
    missing = [f for f in FIELDS if f not in header]
    if missing:
        raise ValueError(f"nvidia-smi output lacks {', '.join(missing)} (header: {lines[0].strip()!r})")
    out = []
    for line in rows:
        cols = [c.strip() for c in line.split(",")]
        if len(cols) != len(header):
            raise ValueError(f"nvidia-smi line {line!r}: expected {len(header)} fields ({', '.join(header)})")
        out.append(dict(zip(header, cols, strict=True)))
    return out


def parse_problems(csv_text: str, min_clock_fraction: float) -> list[GpuProblem]:
    """GPUs with uncorrectable ECC errors, or an SM clock below `min_clock_fraction` of its maximum (or above it).

    An idle GPU clocks down, so the clock check is meant for a GPU under load (the health check runs a matmul
    on it first); `[N/A]` (ECC off, or a field the GPU lacks) is not a failure."""
    problems = []
    for row in parse_rows(csv_text):
        index = int(row["index"])
        ecc = _number(row["ecc.errors.uncorrected.volatile.total"])
        clock, max_clock = _number(row["clocks.sm"]), _number(row["clocks.max.sm"])
        if ecc:
            problems.append(GpuProblem(index, f"{ecc} uncorrectable ECC errors (volatile)"))
        if clock is not None and max_clock:
            if clock < min_clock_fraction * max_clock:
                problems.append(GpuProblem(index, f"SM clock {clock} MHz < {min_clock_fraction:.0%} of {max_clock}"))
            elif clock > max_clock:
                problems.append(GpuProblem(index, f"SM clock {clock} MHz above its maximum {max_clock} MHz"))
    return problems


def query() -> str | None:
    """nvidia-smi's answer, or None where there is no nvidia-smi (not an NVIDIA machine)."""
    if shutil.which("nvidia-smi") is None:
        return None
    return subprocess.run(QUERY, capture_output=True, text=True, timeout=30, check=True).stdout
