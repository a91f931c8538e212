"""The whole sizing study for one hardware profile: what `services/size` and `zaya bench size` run."""

import json
from dataclasses import dataclass
from pathlib import Path

from zaya_config import HardwareProfile
from zaya_config.atomic import write_text_atomic
from zaya_model import ZayaConfig

from collbench.config import SizingConfig
from collbench.sizing.estimator import HardwareEstimator, load_gemm_table
from collbench.sizing.moe_study import MoECandidate, run_moe_study
from collbench.sizing.report import (
    plot_decode_latency,
    plot_pareto,
    recommended_config,
    render_model_yaml,
    write_candidates_csv,
)
from collbench.sizing.rules import SizingRule, dimension_rules

RECOMMENDED_NAME = "recommended_model.yaml"


@dataclass
class SizingOutcome:
    """What the study found and where it wrote it."""

    candidates: list[MoECandidate]
    chosen: MoECandidate
    rules: list[SizingRule]
    recommended: ZayaConfig
    files: dict[str, Path]


def build_estimator(hw: HardwareProfile, measured_dir: str = "") -> HardwareEstimator:
    """Estimator from the profile, with the GEMM table of a characterize run when one is given."""
    table = load_gemm_table(Path(measured_dir) / "gemm.csv") if measured_dir else []
    return HardwareEstimator(hw=hw, gemm_table=table)


def run_sizing(sizing: SizingConfig, base: ZayaConfig, hw: HardwareProfile, out_dir: Path) -> SizingOutcome:
    """MoE study, dimension rules on the chosen shape, the recommended zaya-model config, files and plots."""
    out_dir = Path(out_dir)
    est = build_estimator(hw, sizing.measured_dir)
    cands, chosen = run_moe_study(sizing, base, est)
    chosen_cfg = base.__class__(
        **{
            **base.__dict__,
            "num_experts": chosen.num_experts,
            "moe_intermediate_size": chosen.moe_intermediate_size,
            "num_experts_per_tok": chosen.num_experts_per_tok,
        }
    )
    tpe = max(1, round(sizing.train_tokens_per_step * chosen.num_experts_per_tok / chosen.num_experts))
    rules = dimension_rules(chosen_cfg, est, tpe, sizing.tensor_parallel)
    recommended = recommended_config(base, chosen, rules)
    source = "measured GEMM table " + sizing.measured_dir if sizing.measured_dir else "rules (no measured table)"
    header = (
        f"Recommended by collbench's sizing study for hardware {hw.name} ({source}).\n"
        f"Pareto knee at decode batch {sizing.latency_batch}: {chosen.train_tflops:.4g} TFLOP/s "
        f"({chosen.train_tokens_per_s:.4g} tokens/s, MFU {chosen.mfu:.2f}) in training, "
        f"{chosen.latency(sizing.latency_batch):.4g} ms per decode step."
    )
    files = {
        "candidates": write_candidates_csv(cands, sizing.decode_batches, out_dir / "moe_study.csv"),
        "pareto_png": plot_pareto(cands, chosen, sizing.latency_batch, out_dir / "moe_pareto.png", hw.name),
        "latency_png": plot_decode_latency(cands, sizing.decode_batches, out_dir / "decode_latency.png"),
        "rules": write_text_atomic(
            out_dir / "sizing_rules.json", json.dumps([r.as_row() for r in rules], indent=2) + "\n"
        ),
        "recommended": write_text_atomic(out_dir / RECOMMENDED_NAME, render_model_yaml(recommended, header)),
    }
    return SizingOutcome(cands, chosen, rules, recommended, files)
