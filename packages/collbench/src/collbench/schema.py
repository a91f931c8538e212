"""The one result schema every collective measurement is written in: torch.distributed runs and parsed
nccl-tests/rccl-tests output alike, so both land in the same CSV/zarr tables and plots.

`wrong` follows nccl-tests' `#wrong`: elements that failed the correctness check; -1 when not checked
(nccl-tests prints N/A). Times are per operation in microseconds: `time_us` averaged over ranks,
`time_us_min`/`time_us_max` the fastest and slowest rank (NaN where the tool reports one number).
"""

import dataclasses
import math
import platform
import socket
from dataclasses import dataclass, field

from collbench.busbw import algbw_gbps, busbw_gbps


@dataclass
class BenchResult:
    """One (collective, dtype, size, rank count, in-place) measurement."""

    collective: str
    backend: str
    dtype: str
    size_bytes: int
    count: int
    n_ranks: int
    time_us: float
    algbw_gbps: float
    busbw_gbps: float
    wrong: int = -1
    in_place: bool = False
    time_us_min: float = math.nan
    time_us_max: float = math.nan
    max_rel_error: float = math.nan  # early nccl-tests printed an error magnitude instead of #wrong
    tool: str = "torch"  # torch | nccl-tests | rccl-tests
    host: str = field(default_factory=socket.gethostname)
    device: str = field(default_factory=lambda: platform.processor() or platform.machine())
    job: str = ""  # the Hydra multirun job this row came from, filled when merging

    @classmethod
    def measured(
        cls,
        collective: str,
        backend: str,
        dtype: str,
        size_bytes: int,
        count: int,
        n_ranks: int,
        times_us: list[float],
        **extra: object,
    ) -> "BenchResult":
        """A row from per-rank mean times: average, fastest and slowest rank; bandwidths from the average."""
        avg = sum(times_us) / len(times_us)
        return cls(
            collective=collective,
            backend=backend,
            dtype=dtype,
            size_bytes=size_bytes,
            count=count,
            n_ranks=n_ranks,
            time_us=avg,
            algbw_gbps=algbw_gbps(size_bytes, avg),
            busbw_gbps=busbw_gbps(collective, size_bytes, avg, n_ranks),
            time_us_min=min(times_us),
            time_us_max=max(times_us),
            **extra,
        )  # type: ignore[arg-type]


COLUMNS: tuple[str, ...] = tuple(f.name for f in dataclasses.fields(BenchResult))
STRING_COLUMNS = ("collective", "backend", "dtype", "tool", "host", "device", "job")
INT_COLUMNS = ("size_bytes", "count", "n_ranks", "wrong")
BOOL_COLUMNS = ("in_place",)


def coerce_row(raw: dict[str, str | int | float | bool]) -> BenchResult:
    """A `BenchResult` from a CSV row (strings) or a dict of native values."""
    values: dict[str, object] = {}
    for name in COLUMNS:
        value = raw.get(name, "")
        if name in STRING_COLUMNS:
            values[name] = str(value)
        elif name in INT_COLUMNS:
            values[name] = int(value) if value != "" else -1
        elif name in BOOL_COLUMNS:
            values[name] = value if isinstance(value, bool) else str(value).strip().lower() in ("true", "1")
        else:
            values[name] = float(value) if value not in ("", None) else math.nan
    return BenchResult(**values)  # type: ignore[arg-type]
