"""The whole sizing study for one hardware profile: what `services/size` and `zaya bench size` run."""

import dataclasses
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from zaya_config import HardwareProfile
from zaya_config.atomic import write_text_atomic
from zaya_model import ZayaConfig

from collbench.config import SizingConfig
from collbench.errors import CollbenchError
from collbench.sizing.estimator import HardwareEstimator, load_gemm_table
from collbench.sizing.measure_train import TrainSetup
from collbench.sizing.moe_study import MoECandidate, run_moe_study
from collbench.sizing.report import (
    plot_decode_latency,
    plot_pareto,
    recommended_config,
    render_model_yaml,
    write_candidates_csv,
)
from collbench.sizing.rules import NO_TABLE, SizingRule, dimension_rules
from collbench.sizing.tile_evidence import derive_tile

RECOMMENDED_NAME = "recommended_model.yaml"


@dataclass
class SizingOutcome:
    """What the study found and where it wrote it."""

    candidates: list[MoECandidate]
    chosen: MoECandidate
    rules: list[SizingRule]
    recommended: ZayaConfig
    files: dict[str, Path]
    summary: dict[str, Any] | None = None  # measured mode: the results JSON (candidates, estimator_error, ...)


def build_estimator(hw: HardwareProfile, measured_dir: str = "") -> HardwareEstimator:
    """Estimator from the profile, with the GEMM table of a characterize run when one is given."""
    table = load_gemm_table(Path(measured_dir) / "gemm.csv") if measured_dir else []
    return HardwareEstimator(hw=hw, gemm_table=table)


def run_sizing(
    sizing: SizingConfig,
    base: ZayaConfig,
    hw: HardwareProfile,
    out_dir: Path,
    setup: TrainSetup | None = None,
    progress: bool = True,
) -> SizingOutcome:
    """MoE study, dimension rules on the chosen shape, the recommended zaya-model config, files and plots.

    With `sizing.measure` every candidate is measured with the trainer `setup` describes (its hardware is `hw`)."""
    out_dir = Path(out_dir)
    if sizing.measure:
        if setup is None:
            raise CollbenchError(
                "sizing.measure=true needs the trainer's `train` and `recipe` groups; run it through the size "
                "service (zaya run size), which composes them"
            )
        return run_measured_sizing(sizing, base, dataclasses.replace(setup, hardware=hw), out_dir, progress)
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
    evidence = None
    if est.gemm_table:
        gemm_csv = str(Path(sizing.measured_dir) / "gemm.csv")
        evidence = derive_tile(est.gemm_table, gemm_csv, sizing.measurement.rule_min_drop)
    rules = dimension_rules(chosen_cfg, est, tpe, sizing.tensor_parallel, evidence=evidence)
    recommended = recommended_config(base, chosen, rules)
    source = "measured GEMM table " + sizing.measured_dir if sizing.measured_dir else NO_TABLE
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


def run_measured_sizing(
    sizing: SizingConfig, base: ZayaConfig, setup: TrainSetup, out_dir: Path, progress: bool = True
) -> SizingOutcome:
    """The measured study (`measured_study`) and its files: measurements (CSV, zarr), results JSON, the Pareto
    plot of measured points with the estimator's predictions, decode latency, rules, recommended config."""
    from collbench.sizing.measured_results import measurement_rows
    from collbench.sizing.measured_store import candidate_name
    from collbench.sizing.measured_study import run_measured_study
    from collbench.sizing.report import plot_measured_pareto
    from collbench.tables import write_rows, write_rows_zarr

    r = run_measured_study(sizing, base, setup, out_dir, progress)
    chosen, rules, meta = r.chosen, r.rules, r.meta
    recommended = recommended_config(base, chosen, rules)
    summary = {
        "candidates": r.entries,
        "estimator_error": r.errors,
        "recommended": {
            "name": candidate_name((chosen.num_experts, chosen.moe_intermediate_size, chosen.num_experts_per_tok)),
            "num_experts": chosen.num_experts,
            "moe_intermediate_size": chosen.moe_intermediate_size,
            "num_experts_per_tok": chosen.num_experts_per_tok,
            "why": f"knee of the measured Pareto front (training model FLOP/s vs decode ms at batch "
            f"{sizing.latency_batch})",
            "config": RECOMMENDED_NAME,
        },
        "rules": [x.as_row() for x in rules],
        "tile": r.evidence.as_dict(),
        "meta": meta,
    }
    rows = measurement_rows(r.found, r.entries, setup.hardware.name, meta["device"])
    err = r.errors
    header = (
        f"Recommended by collbench's measured sizing study on {meta['device']} (hardware {setup.hardware.name}; "
        f"{meta['label']}).\nKnee of the measured Pareto front at decode batch {sizing.latency_batch}: "
        f"{chosen.train_tflops:.4g} TFLOP/s ({chosen.train_tokens_per_s:.4g} tokens/s, MFU {chosen.mfu:.2f}) at "
        f"{meta['layers_measured']} layers, {chosen.latency(sizing.latency_batch):.4g} ms per decode step.\n"
        f"Estimator error on held-out candidates: median {err['median']:.1%}, worst {err['worst']:.1%}."
    )
    title = (
        f"MoE width study on {meta['device']} ({setup.hardware.name}), {meta['layers_measured']} layers, "
        f"held-out estimator error median {err['median']:.0%} worst {err['worst']:.0%}"
    )
    files = {
        "measurements_csv": write_rows(rows, out_dir / "measurements.csv"),
        "measurements_zarr": write_rows_zarr(rows, out_dir / "measurements.zarr", {"meta": meta}),
        "results": write_text_atomic(out_dir / "moe_width.json", json.dumps(summary, indent=1) + "\n"),
        "candidates": write_candidates_csv(r.measured, sizing.decode_batches, out_dir / "moe_study.csv"),
        "pareto_png": plot_measured_pareto(
            r.measured, r.predicted, chosen, sizing.latency_batch, out_dir / "moe_pareto.png", title
        ),
        "latency_png": plot_decode_latency(r.measured, sizing.decode_batches, out_dir / "decode_latency.png"),
        "rules": write_text_atomic(
            out_dir / "sizing_rules.json", json.dumps([x.as_row() for x in rules], indent=2) + "\n"
        ),
        "recommended": write_text_atomic(out_dir / RECOMMENDED_NAME, render_model_yaml(recommended, header)),
    }
    if not sizing.measured_dir:
        files["gemm"] = out_dir / "gemm.csv"
    return SizingOutcome(r.measured, chosen, rules, recommended, files, summary)
