"""Skip-route evidence from a pretrain run dir: skip rate and expert loads per layer against their targets.

Reads `RUN_DIR/config.yaml` (the model's `num_experts` and `skip_rate_target`) and the `train` records of
`RUN_DIR/metrics.jsonl` (per-layer `expert_load`, last column = skip), writes `skip_route.json` (the
series, the targets, and the means over the settled tail) and `skip_route.png` under --out.

    python services/pretrain/main.py recipe.phases.0.tokens=160000 recipe.phases.1.tokens=40000 \
        train.global_batch_size=4 train.micro_batch_size=4 logging.log_every_steps=1 hydra.run.dir=/tmp/skip
    python packages/zaya-model/benchmarks/skip_route_report.py /tmp/skip --out /tmp/skip
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import numpy as np
import yaml
from zaya_model import ZayaConfig


def read_run(run_dir: Path) -> tuple[ZayaConfig, np.ndarray, np.ndarray]:
    """(model config, steps [N], loads [N, L, E + 1]) of the run's logged train steps."""
    config = ZayaConfig.from_dict(yaml.safe_load((run_dir / "config.yaml").read_text())["model"])
    records = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines() if line.strip()]
    train = [r for r in records if r.get("kind") == "train" and r.get("expert_load")]
    if not train:
        raise SystemExit(f"{run_dir / 'metrics.jsonl'}: no train record with expert_load (run the pretrain service)")
    return config, np.array([r["step"] for r in train]), np.array([r["expert_load"] for r in train], dtype=float)


def summarize(config: ZayaConfig, steps: np.ndarray, loads: np.ndarray, tail_steps: int) -> dict[str, Any]:
    """Targets, first step with a skipped pair, and the mean loads over the last `tail_steps` steps."""
    skip_target = config.skip_target
    expert_target = (1.0 - skip_target) / config.num_experts
    tail = loads[steps > steps[-1] - tail_steps]
    skipping = np.nonzero(loads[:, :, -1].max(axis=1) > 0)[0]
    mean_tail = tail.mean(axis=0)  # [L, E + 1]
    return {
        "skip_target": skip_target,
        "expert_target": expert_target,
        "first_step_skipping": int(steps[skipping[0]]) if len(skipping) else None,
        "tail_steps": tail_steps,
        "tail_skip_rate_per_layer": mean_tail[:, -1].round(4).tolist(),
        "tail_expert_load_per_layer": mean_tail[:, :-1].round(4).tolist(),
        "tail_max_expert_deviation": float(np.abs(mean_tail[:, :-1] - expert_target).max().round(4)),
        "steps": steps.tolist(),
        "skip_rate_per_layer": loads[:, :, -1].round(4).T.tolist(),
    }


def plot(summary: dict[str, Any], loads: np.ndarray, steps: np.ndarray, path: Path, window: int = 10) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    kernel = np.ones(window) / window
    smooth = np.apply_along_axis(lambda s: np.convolve(s, kernel, mode="valid"), 0, loads)
    smooth_steps = steps[window - 1 :]
    L = loads.shape[1]
    fig, axes = plt.subplots(1, L + 1, figsize=(5 * (L + 1), 3.6), squeeze=False)
    ax = axes[0, 0]
    for layer in range(L):
        ax.plot(steps, loads[:, layer, -1], lw=0.6, alpha=0.35, color=f"C{layer}")
        ax.plot(smooth_steps, smooth[:, layer, -1], lw=1.8, color=f"C{layer}", label=f"layer {layer}")
    ax.axhline(summary["skip_target"], color="k", ls="--", lw=1, label="target")
    ax.set(title="skip rate (thin: per step; thick: 10-step mean)", xlabel="step", ylabel="fraction of tokens")
    ax.legend(fontsize=8)
    for layer in range(L):
        ax = axes[0, layer + 1]
        for e in range(loads.shape[2] - 1):
            ax.plot(smooth_steps, smooth[:, layer, e], lw=1.2, label=f"expert {e}")
        ax.axhline(summary["expert_target"], color="k", ls="--", lw=1, label="target")
        ax.set(title=f"layer {layer}: expert loads (10-step mean)", xlabel="step", ylim=(0, 1))
        ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--tail-steps", type=int, default=100, help="settled window: the last N steps")
    args = parser.parse_args()
    config, steps, loads = read_run(args.run_dir)
    summary = summarize(config, steps, loads, args.tail_steps)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "skip_route.json").write_text(json.dumps(summary, indent=1))
    plot(summary, loads, steps, args.out / "skip_route.png")
    print(
        f"skip target {summary['skip_target']:.3f}: first skip at step {summary['first_step_skipping']}; "
        f"last {args.tail_steps} steps: skip {summary['tail_skip_rate_per_layer']}, "
        f"max |expert load - {summary['expert_target']:.3f}| = {summary['tail_max_expert_deviation']}"
    )


if __name__ == "__main__":
    main()
