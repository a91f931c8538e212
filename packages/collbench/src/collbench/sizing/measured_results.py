"""The measured study's results as the rest of collbench reads them: `MoECandidate`s (measured, or predicted
from step and decode seconds) for the Pareto front and plots, one JSON entry per candidate, and the long
table of every measurement with the predictions beside it (CSV and zarr).
"""

from typing import Any

import numpy as np
from zaya_model import ZayaConfig, count_parameters

from collbench.sizing.measured_store import Measured
from collbench.sizing.moe_study import MoECandidate, candidate_config


def moe_candidates(
    found: list[Measured],
    base: ZayaConfig,
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
