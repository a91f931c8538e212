"""Message-size sweeps as nccl-tests takes them: -b MIN -e MAX, then -f FACTOR or -i STEP.

Size strings accept K, M, G, T suffixes in powers of 1024 as nccl-tests does ("128M" = 134217728).
"""

import re

from collbench.errors import CollbenchError

_SUFFIX = {"": 1, "K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}
_SIZE_RE = re.compile(r"^\s*(\d+)\s*([KMGT]?)(?:I?B)?\s*$", re.IGNORECASE)


def parse_size(text: str | int) -> int:
    """Bytes from `8`, `1K`, `128M`, `8G` (or an int)."""
    if isinstance(text, int):
        if text < 0:
            raise CollbenchError(f"size {text}; allowed: a byte count >= 0")
        return text
    match = _SIZE_RE.match(str(text))
    if not match:
        raise CollbenchError(
            f"cannot read size {text!r}; allowed: an integer with an optional K/M/G/T suffix, e.g. 8, 1K, 128M"
        )
    return int(match.group(1)) * _SUFFIX[match.group(2).upper()]


def format_size(size_bytes: int) -> str:
    """Short human form: 1024 -> '1K', 3 -> '3'."""
    for suffix in ("T", "G", "M", "K"):
        unit = _SUFFIX[suffix]
        if size_bytes >= unit and size_bytes % unit == 0:
            return f"{size_bytes // unit}{suffix}"
    return str(size_bytes)


def size_sweep(min_bytes: str | int, max_bytes: str | int, factor: float = 2.0, step_bytes: str | int = 0) -> list[int]:
    """Sizes from min to max inclusive, multiplying by `factor` (or adding `step_bytes` when given)."""
    lo, hi, step = parse_size(min_bytes), parse_size(max_bytes), parse_size(step_bytes)
    if lo <= 0:
        raise CollbenchError(f"min size {min_bytes!r} = {lo} B; allowed: at least 1 byte")
    if lo > hi:
        raise CollbenchError(
            f"sizes out of order: min {min_bytes!r} ({lo} B) > max {max_bytes!r} ({hi} B); swap -b and -e"
        )
    if step == 0 and factor <= 1.0:
        raise CollbenchError(f"step factor {factor}; allowed: a number > 1 (or give a step in bytes)")
    sizes, size = [], lo
    while size <= hi:
        sizes.append(size)
        nxt = size + step if step else int(size * factor)
        size = nxt if nxt > size else size + 1
    return sizes


def align_size(size_bytes: int, element_bytes: int, n_ranks: int) -> int:
    """Round down to whole elements per rank (at least one), as a collective's buffers need."""
    unit = element_bytes * n_ranks
    return max(unit, size_bytes // unit * unit)
