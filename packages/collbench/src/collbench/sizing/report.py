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


def plot_pareto(cands: list[MoECandidate], chosen: MoECandidate, batch: int, path: Path, hw_name: str) -> Path:
    """Training model FLOP/s against decode latency, the front drawn, the recommendation starred."""
    fig, ax = plt.subplots(figsize=(7, 5))
    for k in sorted({c.num_experts_per_tok for c in cands}):
        pts = [c for c in cands if c.num_experts_per_tok == k]
        ax.scatter([c.latency(batch) for c in pts], [c.train_tflops for c in pts], s=18, label=f"top-{k}")
    front = sorted((c for c in cands if c.pareto), key=lambda c: c.latency(batch))
    ax.plot([c.latency(batch) for c in front], [c.train_tflops for c in front], "k-", lw=1, label="Pareto front")
    for c in front:
        ax.annotate(
            f"E{c.num_experts} F{c.moe_intermediate_size} k{c.num_experts_per_tok}",
            (c.latency(batch), c.train_tflops),
            fontsize=6,
            xytext=(3, 3),
            textcoords="offset points",
        )
    ax.scatter([chosen.latency(batch)], [chosen.train_tflops], marker="*", s=200, color="red", label="recommended")
    ax.set_xlabel(f"decode step latency at batch {batch} (ms)")
    ax.set_ylabel("training throughput (model TFLOP/s achieved)")
    ax.set_title(f"MoE width study on {hw_name}")
    ax.grid(True, alpha=0.3)
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
        "vocab_size % 128": "vocab_size",
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
