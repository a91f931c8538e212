"""The estimator's calibration: the non-negative fit, the pull towards the analytic coefficients, and the
leave-one-candidate-out predictions its reported error comes from; the parts add up to the estimator."""

import numpy as np
import pytest
from collbench import CollbenchError
from collbench.sizing import calibration as cal
from collbench.sizing.estimator import HardwareEstimator
from collbench.sizing.moe_study import candidate_config, decode_step_time_s, train_step_time_s
from zaya_config import hardware
from zaya_model import ZayaConfig, count_parameters

TRUE = np.array([2.0, 0.0, 0.5])


def _parts(n: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).uniform(0.1, 1.0, size=(n, 3))


def test_nonneg_lstsq_recovers_coefficients_and_clips_negative_ones():
    a = _parts(12)
    assert cal.nonneg_lstsq(a, a @ TRUE) == pytest.approx(TRUE, abs=1e-9)
    b = a @ np.array([1.0, -0.7, 0.3])  # the unconstrained fit would be negative in column 1
    x = cal.nonneg_lstsq(a, b)
    assert x[1] == 0 and np.all(x >= 0)
    assert np.linalg.norm(a @ x - b) <= min(  # the best over supports: no single other support does better
        np.linalg.norm(a[:, [j]] @ np.linalg.lstsq(a[:, [j]], b, rcond=None)[0] - b) for j in range(3)
    )


def test_fit_parts_without_prior_is_exact_and_a_strong_prior_wins():
    parts = _parts(10)
    names, prior = ("a", "b", "c"), (1.0, 1.0, 1.0)
    exact = cal.fit_parts(parts, parts @ TRUE, names, prior, prior_weight=0.0)
    assert exact.coef == pytest.approx(TRUE, abs=1e-9)
    assert exact.as_dict() == pytest.approx({"a": 2.0, "b": 0.0, "c": 0.5}, abs=1e-9)
    pulled = cal.fit_parts(parts, parts @ TRUE, names, prior, prior_weight=1e6)
    assert pulled.coef == pytest.approx(prior, abs=1e-3)
    with pytest.raises(CollbenchError, match="positive"):
        cal.fit_parts(parts, -(parts @ TRUE), names, prior, 0.0)


def test_held_out_predictions_never_see_the_candidate_they_predict():
    parts = _parts(8, seed=1)
    measured = parts @ TRUE
    measured[0] *= 2.0  # candidate 0 measured twice as slow as the parts say
    groups = [0, 0, 1, 1, 2, 2, 3, 3]  # two rows per candidate (e.g. two decode batches)
    names, prior = ("a", "b", "c"), (1.0, 1.0, 1.0)
    held = cal.held_out_predictions(parts, measured, groups, names, prior, prior_weight=0.0)
    # fitted on candidates 1-3 (exact data), candidate 0 is predicted at the true parts: its error is 50% on row 0
    assert held[:2] == pytest.approx(parts[:2] @ TRUE, rel=1e-9)
    errors = cal.relative_errors(held, measured)
    assert errors[0] == pytest.approx(0.5) and errors[1] == pytest.approx(0.0, abs=1e-9)
    # the other candidates' fits include the outlier row, so they are off too: held-out error > in-sample zero
    assert np.all(errors[2:] > 1e-6)
    summary = cal.error_summary(errors)
    assert summary["worst"] == pytest.approx(0.5) and summary["median"] == pytest.approx(float(np.median(errors)))
    with pytest.raises(CollbenchError, match="at least 2 candidates"):
        cal.held_out_predictions(parts, measured, [0] * 8, names, prior, 0.0)


def test_parts_with_analytic_coefficients_are_the_estimator():
    est = HardwareEstimator(hardware("h200"))
    base = ZayaConfig.from_preset("zaya1-base", num_hidden_layers=4)
    for point in ((16, 2048, 1), (64, 1024, 2)):
        cfg = candidate_config(base, point)
        train = cal.train_parts(cfg, est, micro_tokens=8 * 4096, micro_batches=8, seq_len=4096)
        assert sum(train[:3]) == pytest.approx(8 * train_step_time_s(cfg, est, 8 * 4096, 4096), rel=1e-12)
        assert train[3] == pytest.approx(est.memory_time_s(28 * count_parameters(cfg).total))
        memory, compute, *_ = cal.decode_parts(cfg, est, 8, 4096, dtype_bytes=2)
        assert max(memory, compute) == pytest.approx(decode_step_time_s(cfg, est, 8, 4096), rel=1e-12)
    wide, narrow = (cal.decode_parts(candidate_config(base, p), est, 8, 4096, 2) for p in ((4, 4096, 1), (64, 256, 1)))
    assert narrow[3] > wide[3]  # more distinct experts touched at batch 8: more per-expert cost
