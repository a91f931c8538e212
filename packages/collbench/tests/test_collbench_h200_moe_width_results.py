"""The committed H200 MoE width study (issue 21) agrees with itself: its Pareto front and knee are the ones
the package computes from the measured points, its headline error is the one its held-out predictions
give, and the recommended config is a loadable ZAYA config of the recommended shape.

These read `benchmarks/results/h200_moe_width.json` as measured on the device (BENCHMARKS.md says how);
no GPU is needed to check them, and a hand edit of any number in it breaks one of them."""

import json
from pathlib import Path

import numpy as np
import pytest
import yaml
from collbench.sizing.moe_study import MoECandidate, knee, pareto_front
from zaya_model import ZayaConfig, count_parameters

RESULTS = Path(__file__).resolve().parents[1] / "benchmarks" / "results"
STUDY = json.loads((RESULTS / "h200_moe_width.json").read_text(encoding="utf-8"))
BATCH = STUDY["meta"]["latency_batch"]


def _measured(entry: dict) -> MoECandidate:
    m = entry["measured"]
    return MoECandidate(
        num_experts=entry["num_experts"],
        moe_intermediate_size=entry["moe_intermediate_size"],
        num_experts_per_tok=entry["num_experts_per_tok"],
        total_params=entry["total_params"],
        active_params=entry["active_params"],
        train_tokens_per_s=m["train_tokens_per_s"],
        train_tflops=m["train_tflops"],
        mfu=m["mfu"],
        decode_latency_ms={int(b): v for b, v in m["decode_ms"].items()},
    )


def test_study_was_measured_on_the_h200_with_twelve_or_more_candidates():
    meta = STUDY["meta"]
    assert meta["label"] == "measured" and meta["device"] == "NVIDIA H200"
    assert len(STUDY["candidates"]) >= 12
    assert all(c["measured"]["train_tokens_per_s"] > 0 for c in STUDY["candidates"])
    # equal active parameters: top-k x width is the same for every candidate
    assert len({c["num_experts_per_tok"] * c["moe_intermediate_size"] for c in STUDY["candidates"]}) == 1


def test_front_and_recommendation_follow_from_the_measured_points():
    cands = [_measured(c) for c in STUDY["candidates"]]
    front = pareto_front(cands, BATCH)
    assert [c.pareto for c in cands] == [c["pareto"] for c in STUDY["candidates"]]
    chosen = knee(front, BATCH)
    rec = STUDY["recommended"]
    assert (chosen.num_experts, chosen.moe_intermediate_size, chosen.num_experts_per_tok) == (
        rec["num_experts"], rec["moe_intermediate_size"], rec["num_experts_per_tok"],
    )  # fmt: skip


def test_headline_error_is_the_held_out_predictions_error_and_meets_the_target():
    errors = []
    for c in STUDY["candidates"]:
        meas, pred = c["measured"], c["predicted_held_out"]
        errors.append(
            abs(pred["train_tokens_per_s"] / meas["train_tokens_per_s"] - 1)
        )  # = measured step / predicted step
        errors += [abs(pred["decode_ms"][b] - v) / v for b, v in meas["decode_ms"].items()]
    err = STUDY["estimator_error"]
    assert err["median"] == pytest.approx(float(np.median(errors)), rel=1e-9)
    assert err["worst"] == pytest.approx(max(errors), rel=1e-9)
    train = errors[:: 1 + len(STUDY["candidates"][0]["measured"]["decode_ms"])]
    assert err["held_out"]["train_tokens_per_s"]["worst"] == pytest.approx(max(train), rel=1e-9)
    assert err["median"] <= 0.10
    assert err["analytic"]["median"] > err["median"]  # calibration is what brings it there


def test_recommended_config_loads_with_the_recommended_shape():
    data = yaml.safe_load((RESULTS / "h200_moe_width" / "recommended_model.yaml").read_text(encoding="utf-8"))
    cfg = ZayaConfig.from_dict(data)
    rec = STUDY["recommended"]
    assert (cfg.num_experts, cfg.moe_intermediate_size, cfg.num_experts_per_tok) == (
        rec["num_experts"], rec["moe_intermediate_size"], rec["num_experts_per_tok"],
    )  # fmt: skip
    entry = next(c for c in STUDY["candidates"] if c["name"] == rec["name"])
    counts = count_parameters(cfg)
    assert (counts.total, counts.active) == (entry["total_params"], entry["active_params"])
