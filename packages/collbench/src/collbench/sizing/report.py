"""The sizing study's outputs: CSV of the grid, Pareto and latency plots, rules JSON, recommended config."""

import csv
import dataclasses
import io
from pathlib import Path

from zaya_config.atomic import write_text_atomic
from zaya_model import ZayaConfig

from collbench.measured import yaml_scalar
from collbench.plots import _save, plt
from collbench.sizing.moe_study import MoECandidate
from collbench.sizing.rules import SizingRule


def write_candidates_csv(cands: list[MoECandidate], batches: list[int], path: Path) -> Path:
    """One row per grid point."""
    rows = [c.as_row(batches) for c in cands]
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=list(rows[0]), lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return write_text_atomic(path, buf.getvalue())


def _front_and_choice(
    ax, cands: list[MoECandidate], front: list[MoECandidate], chosen: MoECandidate, batch: int, label: str,
    named: list[MoECandidate],
) -> None:  # fmt: skip
    """The front as a line, the `named` points labelled with their shape, the choice starred, the y axis."""
    front = sorted(front, key=lambda c: c.latency(batch))
    ax.plot([c.latency(batch) for c in front], [c.train_tflops for c in front], "k-", lw=1, label=label)
    for c in named:
        ax.annotate(
            f"E{c.num_experts} F{c.moe_intermediate_size} k{c.num_experts_per_tok}",
            (c.latency(batch), c.train_tflops),
            fontsize=6,
            xytext=(3, 3),
            textcoords="offset points",
        )
    ax.scatter([chosen.latency(batch)], [chosen.train_tflops], marker="*", s=200, color="red", label="recommended")
    ax.set_ylabel("training throughput (model TFLOP/s achieved)")
    ax.grid(True, alpha=0.3)


def plot_pareto(cands: list[MoECandidate], chosen: MoECandidate, batch: int, path: Path, hw_name: str) -> Path:
    """Training model FLOP/s against decode latency, the front drawn, the recommendation starred."""
    fig, ax = plt.subplots(figsize=(7, 5))
    for k in sorted({c.num_experts_per_tok for c in cands}):
        pts = [c for c in cands if c.num_experts_per_tok == k]
        ax.scatter([c.latency(batch) for c in pts], [c.train_tflops for c in pts], s=18, label=f"top-{k}")
    front = [c for c in cands if c.pareto]
    _front_and_choice(ax, cands, front, chosen, batch, "Pareto front", front)
    ax.set_xlabel(f"decode step latency at batch {batch} (ms)")
    ax.set_title(f"MoE width study on {hw_name}")
    ax.legend(fontsize=7)
    return _save(fig, path)


def plot_decode_latency(cands: list[MoECandidate], batches: list[int], path: Path) -> Path:
    """Decode latency against batch for the Pareto configs (the memory-bound expert reads grow with B)."""
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for c in (c for c in cands if c.pareto):
        ax.plot(
            batches,
            [c.latency(b) for b in batches],
            marker="o",
            ms=3,
            label=f"E{c.num_experts} F{c.moe_intermediate_size} k{c.num_experts_per_tok}",
        )
    ax.set_xscale("log", base=2)
    ax.set_xlabel("decode batch")
    ax.set_ylabel("step latency (ms)")
    ax.set_title("decode latency of the Pareto configs")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    return _save(fig, path)


def recommended_config(base: ZayaConfig, chosen: MoECandidate, rules: list[SizingRule]) -> ZayaConfig:
    """The base config with the chosen MoE shape and every failed dimension rule's recommendation applied."""
    updates: dict[str, int] = {
        "num_experts": chosen.num_experts,
        "num_experts_per_tok": chosen.num_experts_per_tok,
        "moe_intermediate_size": chosen.moe_intermediate_size,
    }
    fix = {
        "hidden_size % matmul_tile": "hidden_size",
        "vocab_size % vocab_tile": "vocab_size",
        "moe_intermediate_size (tile/wave)": "moe_intermediate_size",
        "head_dim in (64, 128, 256)": "head_dim",
    }
    for rule in rules:
        if not rule.ok and rule.name in fix:
            updates[fix[rule.name]] = rule.recommended
    return dataclasses.replace(base, name=f"{base.name}-sized", **updates)


def render_model_yaml(cfg: ZayaConfig, header: str) -> str:
    """A zaya-model preset (conf/model/<name>.yaml) for the recommended config."""
    lines = [f"# {line}" for line in header.splitlines()]
    for key, value in dataclasses.asdict(cfg).items():
        lines.append(f"{key}: {yaml_scalar(value)}")
    return "\n".join(lines) + "\n"


def plot_measured_pareto(
    measured: list[MoECandidate],
    predicted: list[MoECandidate],
    chosen: MoECandidate,
    batch: int,
    path: Path,
    title: str,
) -> Path:
    """Measured points (filled, the front through them) with the held-out estimator's prediction of each (hollow,
    joined to its measurement), the recommendation starred."""
    fig, ax = plt.subplots(figsize=(7.5, 5.2))
    for i, k in enumerate(sorted({c.num_experts_per_tok for c in measured})):
        pairs = [(m, p) for m, p in zip(measured, predicted, strict=True) if m.num_experts_per_tok == k]
        color = f"C{i}"
        ax.scatter(
            [m.latency(batch) for m, _ in pairs],
            [m.train_tflops for m, _ in pairs],
            s=26,
            color=color,
            label=f"top-{k} measured",
        )
        ax.scatter(
            [p.latency(batch) for _, p in pairs],
            [p.train_tflops for _, p in pairs],
            s=26,
            facecolors="none",
            edgecolors=color,
            label=f"top-{k} estimator (held out)",
        )
        for m, p in pairs:
            ax.plot(
                [m.latency(batch), p.latency(batch)], [m.train_tflops, p.train_tflops], color=color, lw=0.6, alpha=0.6
            )
    _front_and_choice(ax, measured, [c for c in measured if c.pareto], chosen, batch, "measured front", measured)
    ax.set_xlabel(f"decode step latency at batch {batch} (ms, measured)")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=6)
    return _save(fig, path)
