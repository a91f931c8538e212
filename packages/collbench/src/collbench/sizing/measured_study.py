"""The measured MoE width study (`sizing.measure=true`): every candidate trained and decoded, the estimator
calibrated on the measurements and judged on candidates held out from its fit, the recommendation made from
the measured points.

Per candidate (the grid of `grid_points`, each at `measurement.layers` layers of full width): zaya-train's
Trainer step at the composed `train`/`recipe` global batch (`measure_train`) and zaya-model's fast decode at
every `decode_batches` size (`measure_decode`). Each candidate's result is saved as it finishes
(`candidates/<name>.json`), so a re-run with the same run folder and settings measures only what is missing.
The GEMM table (a characterize run's, or a sweep of the candidates' own shapes run here) feeds the estimator
and the tile rule.
"""

import dataclasses
import logging
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import torch
from zaya_model import ZayaConfig, count_parameters

from collbench.config import SizingConfig
from collbench.errors import CollbenchError
from collbench.sizing.estimator import HardwareEstimator, load_gemm_table
from collbench.sizing.measure_decode import DecodeSetup, measure_decode
from collbench.sizing.measure_train import TrainSetup, measure_training
from collbench.sizing.measured_calibration import calibrate, errors_report
from collbench.sizing.measured_gemm import run_candidate_gemm_sweep
from collbench.sizing.measured_results import candidate_entry, moe_candidates
from collbench.sizing.measured_store import Measured, candidate_name, load_saved, save_measured, settings_key
from collbench.sizing.moe_study import MoECandidate, candidate_config, grid_points, knee, pareto_front
from collbench.sizing.rules import SizingRule, dimension_rules
from collbench.sizing.tile_evidence import TileEvidence, derive_tile

MIN_CANDIDATES = 3  # a held-out error needs a fit on at least two others
log = logging.getLogger("collbench")


@dataclass
class MeasuredStudy:
    """What the measured study found: per candidate, what was measured and what the estimator predicted."""

    found: list[Measured]
    measured: list[MoECandidate]  # the measurements (Pareto points marked)
    predicted: list[MoECandidate]  # the calibrated estimator's prediction of each, fitted without it
    entries: list[dict[str, Any]]  # the results JSON's candidates
    chosen: MoECandidate
    rules: list[SizingRule]
    evidence: TileEvidence
    errors: dict[str, Any]
    meta: dict[str, Any]


def check_measurable(sizing: SizingConfig, base: ZayaConfig, decode: DecodeSetup, points: list) -> None:
    """Fail before any measurement on what cannot work, naming the setting to change."""
    if len(points) < MIN_CANDIDATES:
        raise CollbenchError(
            f"sizing.measure needs at least {MIN_CANDIDATES} candidates for a held-out estimator error, the grid "
            f"has {len(points)}; add values to sizing.num_experts or sizing.top_k"
        )
    if decode.max_len > base.max_position_embeddings:
        raise CollbenchError(
            f"measured decode needs {decode.max_len} positions (sizing.context_len {sizing.context_len} + "
            f"warm-up and timed steps) but the model has {base.max_position_embeddings}; lower sizing.context_len"
        )


def measure_all(
    sizing: SizingConfig,
    base: ZayaConfig,
    setup: TrainSetup,
    decode: DecodeSetup,
    points: list,
    out_dir: Path,
    progress: bool,
) -> list[Measured]:
    """Every candidate measured (or reloaded), with a progress bar over the candidates."""
    from tqdm import tqdm

    key = settings_key(sizing, base, setup, decode, setup.hardware)
    found = []
    bar = tqdm(points, desc="candidates", unit="cand", disable=not progress)
    for point in bar:
        name = candidate_name(point)
        bar.set_postfix_str(name)
        path = out_dir / "candidates" / f"{name}.json"
        m = load_saved(path, key)
        reused = m is not None
        if m is None:
            cfg = candidate_config(base, point, num_hidden_layers=sizing.measurement.layers, name=name)
            train = measure_training(cfg, setup, name, sizing.measurement.warmup_steps, sizing.measurement.steps)
            m = Measured(name, point, train, measure_decode(cfg, decode, sizing.decode_batches))
            save_measured(m, path, key)
        log.info(
            "%s: %.4g tokens/s, MFU %.1f%%, decode ms per step %s%s",
            name,
            m.train.tokens_per_s,
            100 * m.train.mfu,
            ", ".join(f"B{b} {v:.3g}" for b, v in m.decode_ms().items()),
            " (saved by an earlier run, reused)" if reused else "",
        )
        found.append(m)
    return found


def gemm_table(
    sizing: SizingConfig,
    cfgs: list[ZayaConfig],
    setup: TrainSetup,
    decode: DecodeSetup,
    out_dir: Path,
    progress: bool,
) -> tuple[list, str]:
    """The measured GEMM table and its file: the characterize run's (`measured_dir`), else a sweep run here."""
    if sizing.measured_dir:
        path = Path(sizing.measured_dir) / "gemm.csv"
        return load_gemm_table(path), str(path)
    m = sizing.measurement
    rows, path = run_candidate_gemm_sweep(
        cfgs,
        setup.micro_batch * setup.seq_len,
        setup.hardware,
        decode.device,
        out_dir,
        m.gemm_iters,
        m.gemm_warmup,
        progress,
    )
    return rows, _shown(path)


def _shown(path: Path) -> str:
    """The path as the rules name it: relative to the working directory when under it."""
    path = Path(path).resolve()
    return str(path.relative_to(Path.cwd().resolve())) if path.is_relative_to(Path.cwd().resolve()) else str(path)


def run_measured_study(
    sizing: SizingConfig, base: ZayaConfig, setup: TrainSetup, out_dir: Path, progress: bool = True
) -> MeasuredStudy:
    """Measure, calibrate and choose (what `study.run_measured_sizing` writes)."""
    out_dir = Path(out_dir)
    device = _train_device(setup.train.device)
    m = sizing.measurement
    decode = DecodeSetup(device, sizing.context_len, m.decode_warmup, m.decode_tokens, m.decode_compile)
    points = [p for p in grid_points(sizing, base) if _fits(sizing, base, p)]
    check_measurable(sizing, base, decode, points)
    if device.type == "cpu" and setup.train.cpu_threads is not None:
        torch.set_num_threads(setup.train.cpu_threads)  # the GEMMs and the decoder on the trainer's threads
    micro_tokens = setup.micro_batch * setup.seq_len
    cfgs = [candidate_config(base, p, num_hidden_layers=m.layers) for p in points]
    table, table_file = gemm_table(sizing, cfgs, setup, decode, out_dir, progress)
    evidence: TileEvidence = derive_tile(table, table_file, m.rule_min_drop)
    est = HardwareEstimator(hw=setup.hardware, gemm_table=table)
    found = measure_all(sizing, base, setup, decode, points, out_dir, progress)
    measured_base = dataclasses.replace(base, num_hidden_layers=m.layers)
    c = calibrate(found, measured_base, est, setup, decode, sizing.decode_batches, m.prior_weight)
    batches = sizing.decode_batches
    measured = moe_candidates(found, base, batches, c["yt"], c["yd"])
    predicted = moe_candidates(found, base, batches, c["train_held_out_s"], c["decode_held_out_s"])
    analytic = moe_candidates(found, base, batches, c["train_analytic_s"], c["decode_analytic_s"])
    chosen = knee(pareto_front(measured, sizing.latency_batch), sizing.latency_batch)
    entries = [candidate_entry(*x) for x in zip(found, measured, predicted, analytic, strict=True)]
    chosen_cfg = candidate_config(base, (chosen.num_experts, chosen.moe_intermediate_size, chosen.num_experts_per_tok))
    tpe = max(1, round(micro_tokens * chosen.num_experts_per_tok / chosen.num_experts))
    rules = dimension_rules(chosen_cfg, est, tpe, sizing.tensor_parallel, evidence=evidence)
    meta = {
        "label": "measured" if device.type == "cuda" else "CPU demonstration at tiny width (not GPU figures)",
        "hardware": setup.hardware.name,
        "device": torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu",
        "torch": torch.__version__,
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "base_model": base.name,
        "layers_measured": m.layers,
        "params_counted_at_layers": base.num_hidden_layers,  # candidates' total/active params: the full model
        "seq_len": setup.seq_len,
        "global_batch": setup.global_batch,
        "micro_batch": setup.micro_batch,
        "optimizer": setup.train.optimizer.name,
        "precision": setup.train.precision,
        "decode_context": decode.mean_context,
        "decode_compile": (device.type == "cuda") if m.decode_compile is None else m.decode_compile,
        "gemm_table": table_file,
        "latency_batch": sizing.latency_batch,
    }
    return MeasuredStudy(found, measured, predicted, entries, chosen, rules, evidence, errors_report(c), meta)


def _fits(sizing: SizingConfig, base: ZayaConfig, point: tuple[int, int, int]) -> bool:
    return (
        not sizing.max_total_params or count_parameters(candidate_config(base, point)).total <= sizing.max_total_params
    )


def _train_device(requested: str) -> torch.device:
    """The device the trainer will pick for `train.device` (the decode and GEMM sweep use the same)."""
    if requested == "cuda" or (requested == "auto" and torch.cuda.is_available()):
        return torch.device("cuda")
    return torch.device("cpu")
