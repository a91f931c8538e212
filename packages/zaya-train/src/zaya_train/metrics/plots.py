"""PNG plots of a finished run from its metrics.jsonl: loss curves, and the per-layer expert-load heatmap."""

from pathlib import Path

import numpy as np

from zaya_train.metrics.png import save_png
from zaya_train.metrics.writer import read_metrics, run_history


def plot_run(run_dir: Path) -> list[Path]:
    """Write `loss.png` and `expert_load.png` (when the run logged expert load); return the files written."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    run_dir = Path(run_dir)
    records = run_history(read_metrics(run_dir / "metrics.jsonl"))
    train = [r for r in records if r.get("kind") == "train" and r.get("loss") is not None]
    val = [r for r in records if r.get("kind") == "val"]
    phases = [r for r in records if r.get("kind") == "phase"]
    written = []
    if train:
        fig, ax = plt.subplots(figsize=(7, 4))
        ax.plot([r["tokens"] for r in train], [r["loss"] for r in train], label="train loss", lw=1)
        if val:
            ax.plot([r["tokens"] for r in val], [r["val_loss"] for r in val], "o-", label="validation loss")
        for r in phases:
            ax.axvline(r["tokens"], color="grey", ls="--", lw=0.8)
            ax.text(r["tokens"], ax.get_ylim()[1], f" {r['name']}", va="top", fontsize=8, color="grey")
        ax.set_xlabel("tokens")
        ax.set_ylabel("cross-entropy (nats/token)")
        ax.set_title(f"{run_dir.name}: loss")
        ax.legend()
        save_png(fig, run_dir / "loss.png")
        plt.close(fig)
        written.append(run_dir / "loss.png")
    loads = [r for r in train if r.get("expert_load")]
    if loads:
        last = np.asarray(loads[-1]["expert_load"], dtype=float)  # [layers, experts + skip]
        fig, axes = plt.subplots(1, 2, figsize=(11, 4), gridspec_kw={"width_ratios": [1, 2]})
        im = axes[0].imshow(last, aspect="auto", cmap="viridis")
        axes[0].set_xlabel("expert (last column: skip)")
        axes[0].set_ylabel("layer")
        axes[0].set_yticks(range(last.shape[0]))
        axes[0].set_xticks(range(last.shape[1]))
        axes[0].set_title(f"token share at step {loads[-1]['step']}")
        fig.colorbar(im, ax=axes[0])
        history = np.asarray([np.asarray(r["expert_load"], dtype=float).reshape(-1) for r in loads]).T
        im = axes[1].imshow(
            history,
            aspect="auto",
            cmap="viridis",
            interpolation="nearest",
            extent=(loads[0]["step"], loads[-1]["step"], history.shape[0] - 0.5, -0.5),
        )
        axes[1].set_xlabel("step")
        axes[1].set_ylabel("layer x expert")
        axes[1].set_title("expert load over training")
        fig.colorbar(im, ax=axes[1])
        save_png(fig, run_dir / "expert_load.png")
        plt.close(fig)
        written.append(run_dir / "expert_load.png")
    from zaya_train.metrics.downstream_plot import plot_downstream

    downstream = plot_downstream(run_dir)
    return written if downstream is None else [*written, downstream]
