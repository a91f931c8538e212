"""The NVIDIA part of a node's health check: `nvidia-smi` reports no uncorrectable ECC error and sane clocks.

Read from `nvidia-smi --query-gpu=... --format=csv,noheader,nounits` (QUERY below); the parser is tested on
recorded output, since the test machines have no NVIDIA GPU.
"""

import shutil
import subprocess
from dataclasses import dataclass

FIELDS = ("index", "ecc.errors.uncorrected.volatile.total", "clocks.sm", "clocks.max.sm")
QUERY = ["nvidia-smi", f"--query-gpu={','.join(FIELDS)}", "--format=csv,noheader,nounits"]


@dataclass
class GpuProblem:
    """One GPU that fails the check, and why."""

    index: int
    reason: str


def parse_problems(csv_text: str, min_clock_fraction: float) -> list[GpuProblem]:
    """GPUs with uncorrectable ECC errors, or an SM clock below `min_clock_fraction` of its maximum.

    An idle GPU clocks down, so the clock check is meant for a GPU under load (the health check runs a matmul
    on it first); `[N/A]` (ECC off, or a field the GPU lacks) is not a failure."""
    problems = []
    for line in csv_text.strip().splitlines():
        cols = [c.strip() for c in line.split(",")]
        if len(cols) != len(FIELDS):
            raise ValueError(f"nvidia-smi line {line!r}: expected {len(FIELDS)} fields ({', '.join(FIELDS)})")
        index, ecc, clock, max_clock = cols
        if ecc.isdigit() and int(ecc) > 0:
            problems.append(GpuProblem(int(index), f"{ecc} uncorrectable ECC errors (volatile)"))
        slow = clock.isdigit() and max_clock.isdigit() and int(clock) < min_clock_fraction * int(max_clock)
        if slow:
            problems.append(GpuProblem(int(index), f"SM clock {clock} MHz < {min_clock_fraction:.0%} of {max_clock}"))
    return problems


def query() -> str | None:
    """nvidia-smi's answer, or None where there is no nvidia-smi (not an NVIDIA machine)."""
    if shutil.which("nvidia-smi") is None:
        return None
    return subprocess.run(QUERY, capture_output=True, text=True, timeout=30, check=True).stdout
