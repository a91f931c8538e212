"""`downstream.png`: the downstream scores of a run (metrics.jsonl `kind: downstream`) against tokens seen."""

from collections import defaultdict
from pathlib import Path

from zaya_train.metrics.png import save_png
from zaya_train.metrics.writer import read_metrics, run_history


def downstream_series(records: list[dict]) -> dict[str, dict[str, list[tuple[int, float, float | None]]]]:
    """task -> metric -> [(tokens, value, stderr or None)] from the `downstream` records."""
    series: dict[str, dict[str, list]] = defaultdict(lambda: defaultdict(list))
    for record in records:
        if record.get("kind") != "downstream":
            continue
        for key, value in record.items():
            if "/" not in key or key.endswith("_stderr") or "_stderr/" in key or not isinstance(value, int | float):
                continue
            task, metric = key.split("/", 1)
            stderr = record.get(f"{task}/{metric.split('/')[0]}_stderr")
            series[task][metric].append((record["tokens"], float(value), stderr))
    return series


def plot_downstream(run_dir: Path) -> Path | None:
    """Write `downstream.png` (one panel per task, each metric with its stderr band); None without records."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    run_dir = Path(run_dir)
    series = downstream_series(run_history(read_metrics(run_dir / "metrics.jsonl")))
    if not series:
        return None
    fig, axes = plt.subplots(1, len(series), figsize=(5 * len(series), 3.6), squeeze=False)
    for ax, (task, metrics) in zip(axes[0], sorted(series.items()), strict=True):
        for metric, points in sorted(metrics.items()):
            tokens = [p[0] for p in points]
            values = [p[1] for p in points]
            ax.plot(tokens, values, "o-", label=metric, ms=3)
            if all(p[2] is not None for p in points):
                low = [v - p[2] for v, p in zip(values, points, strict=True)]
                high = [v + p[2] for v, p in zip(values, points, strict=True)]
                ax.fill_between(tokens, low, high, alpha=0.2)
        ax.set_title(task, fontsize=10)
        ax.set_xlabel("tokens")
        ax.legend(fontsize=8)
    fig.suptitle(f"{run_dir.name}: downstream scores (lm-eval)")
    fig.tight_layout()
    path = run_dir / "downstream.png"
    save_png(fig, path)
    plt.close(fig)
    return path
