"""Writing a memory study: memstudy.json, memstudy.csv and PNG plots (bandwidth vs roofline, read latency)."""

import csv
import io
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from zaya_config.atomic import write_atomic, write_text_atomic

SCALAR_TYPES = (int, float, str, bool)
LATENCY_BINS = 40


def scalar_columns(row: dict[str, Any]) -> dict[str, Any]:
    """The flat (CSV-able) part of a result; nested breakdowns stay in the JSON."""
    return {k: v for k, v in row.items() if isinstance(v, SCALAR_TYPES) or v is None}


def write_csv(path: Path, rows: Sequence[dict[str, Any]]) -> None:
    """Rows of scalars as CSV, columns in first-seen order (atomically)."""
    columns: list[str] = []
    for row in rows:
        columns += [k for k in scalar_columns(row) if k not in columns]
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=columns, extrasaction="ignore")
    writer.writeheader()
    for row in rows:
        writer.writerow(scalar_columns(row))
    write_text_atomic(path, buf.getvalue())


def latency_histogram(latencies_ns: np.ndarray) -> dict[str, list[float]]:
    """Read latencies binned for the JSON and the plot."""
    if not len(latencies_ns):
        return {"bin_edges_ns": [], "counts": []}
    counts, edges = np.histogram(latencies_ns, bins=LATENCY_BINS)
    return {"bin_edges_ns": edges.tolist(), "counts": counts.tolist()}


def _pyplot():
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    return plt


def _save(fig: Any, path: Path) -> None:
    write_atomic(path, lambda handle: fig.savefig(handle, format="png", dpi=110))


def plot_roofline_bars(rows: Sequence[dict[str, Any]], labels: Sequence[str], path: Path, title: str) -> bool:
    """Top: achieved vs peak bandwidth; bottom: simulated vs roofline time per token (log); a bar pair per row."""
    plt = _pyplot()
    if plt is None:
        return False
    x = np.arange(len(rows))
    fig, (ax_bw, ax_t) = plt.subplots(2, 1, figsize=(min(14, max(6, 0.9 * len(rows) + 3)), 7))
    ax_bw.bar(x - 0.2, [r["achieved_bw_gbps"] for r in rows], 0.4, label="simulated")
    ax_bw.bar(x + 0.2, [r["peak_bw_gbps"] for r in rows], 0.4, label="peak (roofline)", alpha=0.6)
    ax_bw.set_ylabel("bandwidth (GB/s)")
    ax_t.bar(x - 0.2, [r["time_per_token_ns"] / 1e3 for r in rows], 0.4, label="simulated")
    ax_t.bar(x + 0.2, [r["roofline_time_per_token_ns"] / 1e3 for r in rows], 0.4, label="roofline", alpha=0.6)
    ax_t.set_ylabel("time per token (µs)")
    ax_t.set_yscale("log")
    for ax in (ax_bw, ax_t):
        ax.set_xticks(x, labels, rotation=30 if len(rows) > 4 else 0, ha="right" if len(rows) > 4 else "center",
                      fontsize=8)  # fmt: skip
        ax.legend(fontsize=8)
    fig.suptitle(title)
    fig.tight_layout()
    _save(fig, path)
    plt.close(fig)
    return True


def plot_latency_histograms(histograms: dict[str, dict[str, list[float]]], path: Path, title: str) -> bool:
    """Read-latency histogram per label (ns), overlaid."""
    plt = _pyplot()
    if plt is None:
        return False
    fig, ax = plt.subplots(figsize=(7, 3.8))
    for label, h in histograms.items():
        if h["counts"]:
            ax.stairs(h["counts"], h["bin_edges_ns"], label=label, fill=False, linewidth=1.5)
    ax.set_xlabel("read latency (ns), controller queue to data")
    ax.set_ylabel("reads in the sample")
    ax.set_title(title)
    ax.legend(fontsize=8)
    fig.tight_layout()
    _save(fig, path)
    plt.close(fig)
    return True


def write_study(out: Path, results: Sequence[dict[str, Any]], header: dict[str, Any], plots: bool = True) -> dict:
    """memstudy.json (header + results + latency histograms), memstudy.csv, and the two plots."""
    out.mkdir(parents=True, exist_ok=True)
    rows = [{k: v for k, v in r.items() if k != "read_latencies_ns"} for r in results]
    histograms = {r["phase"]: latency_histogram(r["read_latencies_ns"]) for r in results}
    doc = {**header, "results": rows, "read_latency_histograms": histograms}
    write_text_atomic(out / "memstudy.json", json.dumps(doc, indent=1))
    write_csv(out / "memstudy.csv", rows)
    if plots and rows:
        name = rows[0]["standard"]
        plot_roofline_bars(rows, [r["phase"] for r in rows], out / "bandwidth_roofline.png",
                           f"{header.get('model', '')} on {name}: simulated vs roofline")  # fmt: skip
        plot_latency_histograms(histograms, out / "read_latency.png", f"{name}: read latency")
    return doc
