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
import json
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import torch
from zaya_config import HardwareProfile
from zaya_config.atomic import write_text_atomic
from zaya_model import ZayaConfig, count_parameters

from collbench.config import SizingConfig
from collbench.errors import CollbenchError
from collbench.sizing import calibration as cal
from collbench.sizing.estimator import HardwareEstimator, load_gemm_table
from collbench.sizing.measure_decode import DecodeMeasurement, DecodeSetup, measure_decode
from collbench.sizing.measure_train import TrainMeasurement, TrainSetup, measure_training
from collbench.sizing.measured_gemm import run_candidate_gemm_sweep
from collbench.sizing.moe_study import MoECandidate, candidate_config, grid_points, knee, pareto_front
from collbench.sizing.rules import SizingRule, dimension_rules
from collbench.sizing.tile_evidence import TileEvidence, derive_tile

MIN_CANDIDATES = 3  # a held-out error needs a fit on at least two others
MOE_SHAPE = ("num_experts", "moe_intermediate_size", "num_experts_per_tok", "name")  # what a candidate changes


@dataclass
class Measured:
    """One candidate and what was measured on it."""

    name: str
    point: tuple[int, int, int]
    train: TrainMeasurement
    decode: list[DecodeMeasurement]

    def decode_ms(self) -> dict[int, float]:
        """Batch -> measured ms per step."""
        return {d.batch: d.ms for d in self.decode}


@dataclass
class MeasuredOutcome:
    """The measured study's result and where it was written."""

    candidates: list[dict[str, Any]]
    estimator_error: dict[str, Any]
    chosen: MoECandidate
    rules: list[SizingRule]
    recommended: ZayaConfig
    summary: dict[str, Any]
    files: dict[str, Path]


def candidate_name(point: tuple[int, int, int]) -> str:
    """E16-F2048-k1."""
    e, f, k = point
    return f"E{e}-F{f}-k{k}"


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


def settings_key(
    sizing: SizingConfig, base: ZayaConfig, setup: TrainSetup, decode: DecodeSetup, hw: HardwareProfile
) -> dict:
    """What a saved candidate result must match to be reused by a re-run."""
    train = setup.train
    key = {
        "hardware": hw.name,
        "base_model": {k: v for k, v in dataclasses.asdict(base).items() if k not in MOE_SHAPE},
        "train": [train.optimizer.name, train.precision, train.compile, train.activation_checkpointing, train.seed],
        "decode_compile": decode.compile,
        "warmup": [sizing.measurement.warmup_steps, decode.warmup],
        "layers": sizing.measurement.layers,
        "steps": sizing.measurement.steps,
        "seq_len": setup.seq_len,
        "global_batch": setup.global_batch,
        "micro_batch": setup.micro_batch,
        "decode_batches": list(sizing.decode_batches),
        "prompt_len": decode.prompt_len,
        "decode_tokens": decode.tokens,
        "device": str(decode.device),
    }
    return json.loads(json.dumps(key))  # as it reads back from the saved file (lists, not tuples)


def load_saved(path: Path, key: dict) -> Measured | None:
    """A candidate measured by an earlier run with the same settings, else None."""
    if not path.is_file():
        return None
    data = json.loads(path.read_text())
    if data.get("settings") != key:
        return None
    return Measured(
        data["name"],
        tuple(data["point"]),
        TrainMeasurement(**data["train"]),
        [DecodeMeasurement(**d) for d in data["decode"]],
    )


def save_measured(m: Measured, path: Path, key: dict) -> Path:
    """Write one candidate's result atomically (the re-run's cache)."""
    data = {"name": m.name, "point": list(m.point), "settings": key, "train": asdict(m.train)}
    data["decode"] = [asdict(d) for d in m.decode]
    return write_text_atomic(path, json.dumps(data, indent=1) + "\n")


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
        if m is None:
            cfg = candidate_config(base, point, num_hidden_layers=sizing.measurement.layers, name=name)
            train = measure_training(cfg, setup, name, sizing.measurement.warmup_steps, sizing.measurement.steps)
            m = Measured(name, point, train, measure_decode(cfg, decode, sizing.decode_batches))
            save_measured(m, path, key)
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


def calibrate(
    found: list[Measured],
    measured_base: ZayaConfig,
    est: HardwareEstimator,
    setup: TrainSetup,
    decode: DecodeSetup,
    batches: list[int],
    prior_weight: float,
) -> dict[str, Any]:
    """Parts, held-out and in-sample predictions and both fits; `measured_base` is the base at the measured depth."""
    micro_tokens = setup.micro_batch * setup.seq_len
    n_micro = max(1, setup.global_batch // setup.micro_batch)
    cfgs = [candidate_config(measured_base, m.point) for m in found]
    xt = np.array([cal.train_parts(c, est, micro_tokens, n_micro, setup.seq_len) for c in cfgs])
    yt = np.array([m.train.step_s for m in found])
    xd = np.array([cal.decode_parts(c, est, b, decode.mean_context, decode.dtype_bytes) for c in cfgs for b in batches])
    yd = np.array([m.decode_ms()[b] / 1e3 for m in found for b in batches])
    groups_d = [i for i in range(len(found)) for _ in batches]
    t_args, d_args = (
        (cal.TRAIN_PARTS, cal.TRAIN_PRIOR, prior_weight),
        (cal.DECODE_PARTS, cal.DECODE_PRIOR, prior_weight),
    )
    out = {
        "train_held_out_s": cal.held_out_predictions(xt, yt, list(range(len(found))), *t_args),
        "train_analytic_s": xt @ np.array(cal.TRAIN_PRIOR),
        "decode_held_out_s": cal.held_out_predictions(xd, yd, groups_d, *d_args),
        "decode_analytic_s": xd @ np.array(cal.DECODE_PRIOR),
        "train_fit": cal.fit_parts(xt, yt, *t_args),
        "decode_fit": cal.fit_parts(xd, yd, *d_args),
        "yt": yt,
        "yd": yd,
    }
    out["train_fitted_s"] = out["train_fit"].predict(xt)
    out["decode_fitted_s"] = out["decode_fit"].predict(xd)
    return out


def errors_report(c: dict[str, Any]) -> dict[str, Any]:
    """Relative errors of tokens/s (training) and ms per step (decode): held out (the headline), in-sample and
    analytic (the uncalibrated estimator)."""

    def tps_err(pred_s: np.ndarray) -> np.ndarray:  # error of tokens/s = |measured step / predicted step - 1|
        return np.abs(c["yt"] / pred_s - 1.0)

    report: dict[str, Any] = {}
    for label, t_key, d_key in (
        ("held_out", "train_held_out_s", "decode_held_out_s"),
        ("in_sample", "train_fitted_s", "decode_fitted_s"),
        ("analytic", "train_analytic_s", "decode_analytic_s"),
    ):
        et, ed = tps_err(c[t_key]), cal.relative_errors(c[d_key], c["yd"])
        report[label] = {
            **cal.error_summary(np.concatenate([et, ed])),
            "train_tokens_per_s": cal.error_summary(et),
            "decode_ms": cal.error_summary(ed),
        }
    return {
        "median": report["held_out"]["median"],
        "worst": report["held_out"]["worst"],
        "method": "leave one candidate out: refit without it, predict its tokens/s and its decode ms at every batch",
        **report,
        "coefficients": {"train": c["train_fit"].as_dict(), "decode": c["decode_fit"].as_dict()},
    }


def moe_candidates(
    found: list[Measured],
    base: ZayaConfig,
    setup: TrainSetup,
    batches: list[int],
    train_s: np.ndarray,
    decode_s: np.ndarray,
) -> list[MoECandidate]:
    """MoECandidate per measured point from step seconds and decode seconds (measured or predicted)."""
    out = []
    for i, m in enumerate(found):
        full = count_parameters(candidate_config(base, m.point))
        tokens = m.train.tokens_per_step
        scale = tokens / train_s[i]
        out.append(
            MoECandidate(
                num_experts=m.point[0],
                moe_intermediate_size=m.point[1],
                num_experts_per_tok=m.point[2],
                total_params=full.total,
                active_params=full.active,
                train_tokens_per_s=scale,
                train_tflops=m.train.model_tflops * scale / m.train.tokens_per_s,
                mfu=m.train.mfu * scale / m.train.tokens_per_s,
                decode_latency_ms={b: 1e3 * float(decode_s[i * len(batches) + j]) for j, b in enumerate(batches)},
            )
        )
    return out


def candidate_entry(m: Measured, meas: MoECandidate, pred: MoECandidate, analytic: MoECandidate) -> dict[str, Any]:
    """One candidate in the results JSON."""

    def numbers(c: MoECandidate) -> dict[str, Any]:
        return {
            "train_tokens_per_s": c.train_tokens_per_s,
            "train_tflops": c.train_tflops,
            "mfu": c.mfu,
            "decode_ms": {str(b): v for b, v in c.decode_latency_ms.items()},
        }

    return {
        "name": m.name,
        "num_experts": meas.num_experts,
        "moe_intermediate_size": meas.moe_intermediate_size,
        "num_experts_per_tok": meas.num_experts_per_tok,
        "total_params": meas.total_params,
        "active_params": meas.active_params,
        "pareto": meas.pareto,
        "measured": {
            **numbers(meas),
            "step_s": m.train.step_s,
            "step_s_min": m.train.step_s_min,
            "step_s_max": m.train.step_s_max,
            "tokens_per_step": m.train.tokens_per_step,
            "decode_ms_min": {str(d.batch): d.ms_min for d in m.decode},
            "decode_ms_max": {str(d.batch): d.ms_max for d in m.decode},
        },
        "predicted_held_out": numbers(pred),
        "predicted_analytic": numbers(analytic),
    }


def measurement_rows(found: list[Measured], entries: list[dict[str, Any]], hw: str, device: str) -> list[dict]:
    """Long table of every measurement with the predictions beside it (the CSV and zarr)."""
    rows = []
    for m, e in zip(found, entries, strict=True):
        e_, f, k = m.point
        common = {
            "candidate": m.name,
            "num_experts": e_,
            "moe_intermediate_size": f,
            "num_experts_per_tok": k,
            "hardware": hw,
            "device": device,
        }
        rows.append(
            {
                **common,
                "kind": "train",
                "batch": 0,
                "seconds": m.train.step_s,
                "seconds_min": m.train.step_s_min,
                "seconds_max": m.train.step_s_max,
                "tokens_per_s": m.train.tokens_per_s,
                "model_tflops": m.train.model_tflops,
                "mfu": m.train.mfu,
                "predicted_held_out_tokens_per_s": e["predicted_held_out"]["train_tokens_per_s"],
                "predicted_analytic_tokens_per_s": e["predicted_analytic"]["train_tokens_per_s"],
                "decode_ms": None,
                "predicted_held_out_ms": None,
                "predicted_analytic_ms": None,
            }
        )
        for d in m.decode:
            rows.append(
                {
                    **common,
                    "kind": "decode",
                    "batch": d.batch,
                    "seconds": d.ms / 1e3,
                    "seconds_min": d.ms_min / 1e3,
                    "seconds_max": d.ms_max / 1e3,
                    "tokens_per_s": d.batch / d.ms * 1e3,
                    "model_tflops": None,
                    "mfu": None,
                    "predicted_held_out_tokens_per_s": None,
                    "predicted_analytic_tokens_per_s": None,
                    "decode_ms": d.ms,
                    "predicted_held_out_ms": e["predicted_held_out"]["decode_ms"][str(d.batch)],
                    "predicted_analytic_ms": e["predicted_analytic"]["decode_ms"][str(d.batch)],
                }
            )
    return rows


def run_measured_study(
    sizing: SizingConfig, base: ZayaConfig, setup: TrainSetup, out_dir: Path, progress: bool = True
) -> dict[str, Any]:
    """Measure, calibrate and choose; returns the pieces `study.run_sizing` writes (see `write_measured`)."""
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
    measured = moe_candidates(found, base, setup, batches, c["yt"], c["yd"])
    predicted = moe_candidates(found, base, setup, batches, c["train_held_out_s"], c["decode_held_out_s"])
    analytic = moe_candidates(found, base, setup, batches, c["train_analytic_s"], c["decode_analytic_s"])
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
    return {
        "found": found,
        "measured": measured,
        "predicted": predicted,
        "entries": entries,
        "chosen": chosen,
        "rules": rules,
        "evidence": evidence,
        "errors": errors_report(c),
        "meta": meta,
        "est": est,
    }


def _fits(sizing: SizingConfig, base: ZayaConfig, point: tuple[int, int, int]) -> bool:
    return (
        not sizing.max_total_params or count_parameters(candidate_config(base, point)).total <= sizing.max_total_params
    )


def _train_device(requested: str) -> torch.device:
    """The device the trainer will pick for `train.device` (the decode and GEMM sweep use the same)."""
    if requested == "cuda" or (requested == "auto" and torch.cuda.is_available()):
        return torch.device("cuda")
    return torch.device("cpu")
