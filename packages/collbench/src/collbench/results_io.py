"""Collective results on disk: CSV for people and spreadsheets, zarr for code, merged across a multirun.

The zarr store holds one 1-D array per schema column; string columns are stored as integer codes with
their categories in the array's attributes (zarr v3 has no stable string type yet). The store's
attributes carry the SHA-256 of the CSV rendering of the same rows, so a copy can be checked.
"""

import csv
import hashlib
import io
import math
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np
from zaya_config.atomic import write_dir_atomic, write_text_atomic

from collbench.errors import CollbenchError
from collbench.schema import BOOL_COLUMNS, COLUMNS, INT_COLUMNS, STRING_COLUMNS, BenchResult, coerce_row

CSV_NAME = "collectives.csv"
ZARR_NAME = "collectives.zarr"


def render_csv(rows: Sequence[BenchResult]) -> str:
    """The rows as CSV text with the schema's columns in order."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(COLUMNS)
    for row in rows:
        writer.writerow(_cell(getattr(row, name)) for name in COLUMNS)
    return buf.getvalue()


def _cell(value: object) -> object:
    if isinstance(value, float):
        return "" if math.isnan(value) else repr(round(value, 6))
    return value


def write_csv(rows: Sequence[BenchResult], path: Path) -> Path:
    """Write rows to a CSV file atomically."""
    return write_text_atomic(path, render_csv(rows))


def read_csv(path: Path) -> list[BenchResult]:
    """Rows from a CSV written by `write_csv` (or by hand with the same header)."""
    path = Path(path)
    if not path.is_file():
        raise CollbenchError(f"no results file at {path}; run a sweep first or check the path")
    with path.open(newline="") as fh:
        reader = csv.DictReader(fh)
        missing = [c for c in ("collective", "size_bytes", "time_us") if c not in (reader.fieldnames or [])]
        if missing:
            raise CollbenchError(f"{path} is not a collbench results CSV: missing columns {missing}")
        return [coerce_row(raw) for raw in reader]


def write_zarr(rows: Sequence[BenchResult], path: Path) -> Path:
    """Write rows as a zarr group of column arrays, atomically."""
    import zarr

    digest = hashlib.sha256(render_csv(rows).encode()).hexdigest()

    def fill(tmp: Path) -> None:
        group = zarr.open_group(str(tmp), mode="w")
        group.attrs.update({"schema": list(COLUMNS), "n_rows": len(rows), "csv_sha256": digest})
        for name in COLUMNS:
            values = [getattr(r, name) for r in rows]
            if name in STRING_COLUMNS:
                categories = sorted(set(values))
                codes = np.array([categories.index(v) for v in values], dtype=np.int32)
                arr = group.create_array(name, data=codes if len(codes) else np.zeros(0, np.int32))
                arr.attrs["categories"] = categories
            elif name in INT_COLUMNS:
                group.create_array(name, data=np.array(values, dtype=np.int64))
            elif name in BOOL_COLUMNS:
                group.create_array(name, data=np.array(values, dtype=bool))
            else:
                group.create_array(name, data=np.array(values, dtype=np.float64))

    return write_dir_atomic(path, fill)


def read_zarr(path: Path) -> list[BenchResult]:
    """Rows back from a zarr store written by `write_zarr`; checks the stored checksum."""
    import zarr

    group = zarr.open_group(str(path), mode="r")
    n = int(group.attrs["n_rows"])
    columns: dict[str, list[object]] = {}
    for name in COLUMNS:
        arr = group[name]
        data = arr[:] if n else []
        if name in STRING_COLUMNS:
            cats = list(arr.attrs["categories"])
            columns[name] = [cats[int(c)] for c in data]
        else:
            columns[name] = [v.item() for v in data]
    rows = [coerce_row({name: columns[name][i] for name in COLUMNS}) for i in range(n)]  # type: ignore[misc]
    if hashlib.sha256(render_csv(rows).encode()).hexdigest() != group.attrs["csv_sha256"]:
        raise CollbenchError(f"checksum mismatch in {path}: the store was modified or truncated; re-run the sweep")
    return rows


def write_results(rows: Sequence[BenchResult], out_dir: Path) -> tuple[Path, Path]:
    """CSV and zarr of the same rows in `out_dir`."""
    out_dir = Path(out_dir)
    return write_csv(rows, out_dir / CSV_NAME), write_zarr(rows, out_dir / ZARR_NAME)


def merge_multirun(sweep_dir: Path, out_dir: Path | None = None) -> list[BenchResult]:
    """Concatenate every job's CSV under a Hydra multirun folder, tagging rows with their job folder."""
    sweep_dir = Path(sweep_dir)
    found = sorted(p for p in sweep_dir.rglob(CSV_NAME) if p.parent != (out_dir or sweep_dir / "merged"))
    if not found:
        raise CollbenchError(f"no {CSV_NAME} under {sweep_dir}; is this a characterize multirun folder?")
    merged: list[BenchResult] = []
    for path in found:
        job = str(path.parent.relative_to(sweep_dir))
        for row in read_csv(path):
            row.job = row.job or job
            merged.append(row)
    write_results(merged, out_dir or sweep_dir / "merged")
    return merged


def rows_where(rows: Iterable[BenchResult], **match: object) -> list[BenchResult]:
    """Rows whose fields equal every given value."""
    return [r for r in rows if all(getattr(r, k) == v for k, v in match.items())]
