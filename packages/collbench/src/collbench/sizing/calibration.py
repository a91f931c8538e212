"""The estimator calibrated on measured steps, and its error on candidates held out from the fit.

The analytic estimator (`HardwareEstimator`, with the measured GEMM table when there is one) splits a step into
parts whose sum is its prediction: for training, GEMM time at the table's rates, the model's other FLOPs at
peak, kernel launches, and the optimizer's pass over the parameters; for decoding, weight/KV traffic at the
bandwidth ceiling, FLOPs at peak, a fixed cost per layer and one per expert the batch touches. Calibration
scales each part by a non-negative coefficient fitted to the measurements (least squares on the relative
error, pulled towards the analytic coefficients by `prior_weight`, so a handful of candidates cannot send a
part's coefficient anywhere). `held_out_errors` refits with each candidate left out and predicts it: those
errors, not the in-sample ones, say how far the calibrated estimator can be trusted on an unmeasured config.
"""

import itertools
from dataclasses import dataclass

import numpy as np
from zaya_model import ZayaConfig, count_parameters, decode_bytes_per_token, flops_per_token
from zaya_model.accounting import expected_distinct_experts

from collbench.errors import CollbenchError
from collbench.sizing.estimator import HardwareEstimator
from collbench.sizing.moe_study import decode_step_flops, train_step_parts_s

# fp32 master weights under AdamW: read weight, gradient and two moments, write weight and moments (7 x 4 bytes)
OPTIMIZER_BYTES_PER_PARAM = 28
TRAIN_PARTS = ("gemm_s", "rest_s", "launch_s", "optimizer_s")
TRAIN_PRIOR = (1.0, 1.0, 1.0, 1.0)  # the analytic estimate: every part as computed
DECODE_PARTS = ("memory_s", "compute_s", "layer_s", "expert_s")
DECODE_PRIOR = (1.0, 1.0, 0.0, 0.0)  # the analytic estimate has no per-layer or per-expert fixed cost


def train_parts(cfg: ZayaConfig, est: HardwareEstimator, micro_tokens: int, micro_batches: int, seq_len: int) -> list:
    """The analytic parts (seconds) of one optimizer step of `micro_batches` forward+backward passes of
    `micro_tokens` tokens, in `TRAIN_PARTS` order."""
    p = train_step_parts_s(cfg, est, micro_tokens, seq_len)
    optimizer = count_parameters(cfg).total * OPTIMIZER_BYTES_PER_PARAM
    return [
        micro_batches * p["gemm_s"],
        micro_batches * p["rest_s"],
        micro_batches * p["launches"] * est.kernel_overhead_s,
        est.memory_time_s(optimizer),
    ]


def decode_parts(cfg: ZayaConfig, est: HardwareEstimator, batch: int, context_len: int, dtype_bytes: int) -> list:
    """The analytic parts (seconds) of one decode step of `batch` sequences, in `DECODE_PARTS` order."""
    traffic = decode_bytes_per_token(cfg, context_len, batch, dtype_bytes).total
    flops = decode_step_flops(cfg, batch, context_len)
    layers = cfg.num_hidden_layers
    return [
        est.memory_time_s(traffic),
        flops / est.peak_flops,
        layers * est.kernel_overhead_s,
        layers * expected_distinct_experts(cfg, batch) * est.kernel_overhead_s,
    ]


def model_flops_per_step(cfg: ZayaConfig, tokens: int, seq_len: int) -> float:
    """Model FLOPs (forward + backward) of a training step of `tokens` tokens: what MFU counts."""
    return flops_per_token(cfg, seq_len, training=True) * tokens


def nonneg_lstsq(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """argmin ||a x - b|| over x >= 0, by trying every support (a few columns: exact and dependency-free)."""
    n = a.shape[1]
    best, best_res = np.zeros(n), float(np.sum(b**2))
    for size in range(1, n + 1):
        for cols in itertools.combinations(range(n), size):
            x_s = np.linalg.lstsq(a[:, cols], b, rcond=None)[0]
            if np.any(x_s < 0):
                continue
            x = np.zeros(n)
            x[list(cols)] = x_s
            res = float(np.sum((a @ x - b) ** 2))
            if res < best_res - 1e-15:
                best, best_res = x, res
    return best


@dataclass
class PartsFit:
    """Coefficients per analytic part; a prediction is the parts' weighted sum."""

    names: tuple[str, ...]
    coef: np.ndarray

    def predict(self, parts: np.ndarray) -> np.ndarray:
        """Predicted seconds of rows of parts ([n, len(names)])."""
        return np.asarray(parts, dtype=float) @ self.coef

    def as_dict(self) -> dict[str, float]:
        """Part name -> coefficient."""
        return {n: float(c) for n, c in zip(self.names, self.coef, strict=True)}


def fit_parts(
    parts: np.ndarray, measured: np.ndarray, names: tuple[str, ...], prior: tuple[float, ...], prior_weight: float
) -> PartsFit:
    """Non-negative coefficients minimising sum((parts @ c / measured - 1)^2) + prior_weight * sum((s (c - prior))^2),
    s being each part's mean share of a measurement (so the pull is in the same relative units as the error)."""
    parts, measured = np.asarray(parts, dtype=float), np.asarray(measured, dtype=float)
    if parts.ndim != 2 or parts.shape[0] != measured.shape[0] or parts.shape[1] != len(names):
        raise CollbenchError(f"fit_parts: parts {parts.shape} do not match {len(measured)} measurements x {names}")
    if np.any(measured <= 0) or not np.all(np.isfinite(parts)):
        raise CollbenchError("fit_parts: measurements must be positive and parts finite")
    a = parts / measured[:, None]
    share = a.mean(axis=0)
    root = np.sqrt(prior_weight)
    a_aug = np.vstack([a, root * np.diag(share)])
    b_aug = np.concatenate([np.ones(len(measured)), root * share * np.asarray(prior, dtype=float)])
    return PartsFit(tuple(names), nonneg_lstsq(a_aug, b_aug))


def relative_errors(predicted: np.ndarray, measured: np.ndarray) -> np.ndarray:
    """|predicted - measured| / measured, elementwise."""
    return np.abs(np.asarray(predicted, dtype=float) - measured) / np.asarray(measured, dtype=float)


def held_out_predictions(
    parts: np.ndarray,
    measured: np.ndarray,
    groups: list[int],
    names: tuple[str, ...],
    prior: tuple[float, ...],
    prior_weight: float,
) -> np.ndarray:
    """Each row predicted by a fit on the rows of every other group (leave one candidate out)."""
    groups_arr = np.asarray(groups)
    unique = sorted(set(groups))
    if len(unique) < 2:
        raise CollbenchError(
            f"a held-out error needs measurements of at least 2 candidates, got {len(unique)}; add candidates"
        )
    out = np.empty(len(measured))
    for g in unique:
        held = groups_arr == g
        fit = fit_parts(parts[~held], measured[~held], names, prior, prior_weight)
        out[held] = fit.predict(parts[held])
    return out


def error_summary(errors: np.ndarray) -> dict[str, float]:
    """Median and worst of relative errors."""
    return {"median": float(np.median(errors)), "worst": float(np.max(errors))}
