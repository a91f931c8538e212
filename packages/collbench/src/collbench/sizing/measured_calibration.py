"""The estimator calibrated on a measured study: the analytic parts of every candidate's step and decode
(`calibration`), the fits, the leave-one-candidate-out predictions, and the error report of `moe_width.json`.
"""

from typing import Any

import numpy as np
from zaya_model import ZayaConfig

from collbench.sizing import calibration as cal
from collbench.sizing.estimator import HardwareEstimator
from collbench.sizing.measure_decode import DecodeSetup
from collbench.sizing.measure_train import TrainSetup
from collbench.sizing.measured_store import Measured
from collbench.sizing.moe_study import candidate_config


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
