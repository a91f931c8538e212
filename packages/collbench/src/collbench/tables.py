"""Plain CSV/JSON tables of dict rows (GEMM and bandwidth sweeps), written atomically."""

import csv
import io
import json
from pathlib import Path

from zaya_config.atomic import write_text_atomic


def write_rows(rows: list[dict[str, object]], csv_path: Path, json_path: Path | None = None) -> Path:
    """Rows as CSV (and JSON when asked); the header is the first row's keys."""
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=list(rows[0]) if rows else [], lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    write_text_atomic(csv_path, buf.getvalue())
    if json_path is not None:
        write_text_atomic(json_path, json.dumps(rows, indent=1) + "\n")
    return Path(csv_path)
