"""Plain CSV/JSON/zarr tables of dict rows (GEMM and bandwidth sweeps, sizing measurements), written atomically."""

import csv
import hashlib
import io
import json
from pathlib import Path

import numpy as np
from zaya_config.atomic import write_dir_atomic, write_text_atomic


def render_rows_csv(rows: list[dict[str, object]]) -> str:
    """Rows as CSV text; the header is the first row's keys."""
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=list(rows[0]) if rows else [], lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return buf.getvalue()


def write_rows(rows: list[dict[str, object]], csv_path: Path, json_path: Path | None = None) -> Path:
    """Rows as CSV (and JSON when asked); the header is the first row's keys."""
    write_text_atomic(csv_path, render_rows_csv(rows))
    if json_path is not None:
        write_text_atomic(json_path, json.dumps(rows, indent=1) + "\n")
    return Path(csv_path)


def write_rows_zarr(rows: list[dict[str, object]], path: Path, attrs: dict[str, object] | None = None) -> Path:
    """Rows as a zarr group of column arrays, atomically: strings as integer codes (categories in the array's
    attributes), bools, ints, the rest float64 (None as NaN); the SHA-256 of the rows' CSV in the group's."""
    import zarr

    if not rows:
        raise ValueError(f"write_rows_zarr: no rows to write to {path}")
    columns = list(rows[0])
    digest = hashlib.sha256(render_rows_csv(rows).encode()).hexdigest()

    def fill(tmp: Path) -> None:
        group = zarr.open_group(str(tmp), mode="w")
        group.attrs.update({**(attrs or {}), "columns": columns, "n_rows": len(rows), "csv_sha256": digest})
        for name in columns:
            values = [r.get(name) for r in rows]
            if all(isinstance(v, str) for v in values):
                categories = sorted(set(values))
                arr = group.create_array(name, data=np.array([categories.index(v) for v in values], dtype=np.int32))
                arr.attrs["categories"] = categories
            elif all(isinstance(v, bool) for v in values):
                group.create_array(name, data=np.array(values, dtype=bool))
            elif all(isinstance(v, int) and not isinstance(v, bool) for v in values):
                group.create_array(name, data=np.array(values, dtype=np.int64))
            else:
                group.create_array(name, data=np.array([np.nan if v is None else v for v in values], dtype=float))

    return write_dir_atomic(path, fill)


def read_rows_zarr(path: Path) -> list[dict[str, object]]:
    """Rows back from `write_rows_zarr` (strings decoded, NaN kept as NaN)."""
    import zarr

    group = zarr.open_group(str(path), mode="r")
    n, data = int(group.attrs["n_rows"]), {}
    for name in group.attrs["columns"]:
        arr = group[name]
        cats = arr.attrs.get("categories")
        data[name] = [cats[int(v)] for v in arr[:]] if cats is not None else [v.item() for v in arr[:]]
    return [{name: data[name][i] for name in data} for i in range(n)]
