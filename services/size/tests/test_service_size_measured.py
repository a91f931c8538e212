"""services/size with `sizing.measure=true` end to end on a CPU, as collbench's README runs it (its command, as
written): four zaya1-tiny candidates at equal active parameters, each trained by zaya-train's Trainer and
decoded by ZayaDecoder, a GEMM sweep, the calibrated estimator's held-out error, the recommendation from the
measurements; then a re-run that reuses them, and the README's line that reads the result."""

import csv
import json

import numpy as np
import pytest
import yaml
from collbench.sizing.moe_study import MoECandidate, knee, pareto_front
from collbench.tables import read_rows_zarr
from readme_blocks import checkout_workdir, readme_command, run_script
from zaya_model import ZayaConfig

README = "packages/collbench/README.md"
# zaya1-tiny is 4 experts x 32, top-1: active expert width 32 -> (E, F, k) in {2, 4} x {(32, 1), (16, 2)};
# decode batches [1,4]; hydra.run.dir=outputs/size-measured
MEASURED = readme_command(README, "python3 services/size/main.py sizing.measure=true")
READ_RESULT = readme_command(README, "python3 -c \"import json; r = json.load(open('outputs/size-measured/")


def _front_knee(cands: list[dict], batch: int) -> str:
    """The knee of the measured front, recomputed from the JSON's measured numbers."""
    moe = [
        MoECandidate(c["num_experts"], c["moe_intermediate_size"], c["num_experts_per_tok"], 0, 0,
                     c["measured"]["train_tokens_per_s"], c["measured"]["train_tflops"], c["measured"]["mfu"],
                     {int(b): v for b, v in c["measured"]["decode_ms"].items()})
        for c in cands
    ]  # fmt: skip
    best = knee(pareto_front(moe, batch), batch)
    return f"E{best.num_experts}-F{best.moe_intermediate_size}-k{best.num_experts_per_tok}"


@pytest.mark.slow
@pytest.mark.timeout(400)
def test_measured_sizing_on_cpu_measures_calibrates_and_recommends(tmp_path):
    work = checkout_workdir(tmp_path)
    first = run_script(MEASURED, work, timeout=400)
    assert first.returncode == 0, first.stderr[-4000:]
    run_dir = work / "outputs" / "size-measured"
    summary = json.loads((run_dir / "moe_width.json").read_text())
    cands = summary["candidates"]
    assert sorted(c["name"] for c in cands) == ["E2-F16-k2", "E2-F32-k1", "E4-F16-k2", "E4-F32-k1"]
    for c in cands:  # equal active expert width, every decode batch measured, predictions beside them
        assert c["moe_intermediate_size"] * c["num_experts_per_tok"] == 32
        assert set(c["measured"]["decode_ms"]) == set(c["predicted_held_out"]["decode_ms"]) == {"1", "4"}
        assert c["measured"]["train_tokens_per_s"] > 0 and 0 < c["measured"]["mfu"] < 1
        assert c["measured"]["tokens_per_step"] == 16 * 128  # train=tiny-cpu: 16 sequences of 128 tokens

    # the headline error is the held-out one, recomputed here from the candidates' own numbers
    errs = []
    for c in cands:
        m, p = c["measured"], c["predicted_held_out"]
        errs.append(abs(p["train_tokens_per_s"] - m["train_tokens_per_s"]) / m["train_tokens_per_s"])
        errs += [abs(p["decode_ms"][b] - v) / v for b, v in m["decode_ms"].items()]
    err = summary["estimator_error"]
    assert err["median"] == pytest.approx(float(np.median(errs)), rel=1e-9)
    assert err["worst"] == pytest.approx(max(errs), rel=1e-9)

    # recommended from the measurements: the knee of the measured front, and the config written for it
    rec = summary["recommended"]
    assert rec["name"] == _front_knee(cands, 4)
    model = ZayaConfig.from_dict(yaml.safe_load((run_dir / "recommended_model.yaml").read_text()))
    assert (model.num_experts, model.num_experts_per_tok) == (rec["num_experts"], rec["num_experts_per_tok"])
    assert "held-out candidates" in (run_dir / "recommended_model.yaml").read_text()

    # rules name the measurement (the GEMM sweep this run wrote) instead of "no measured table"
    rules = {r["name"]: r for r in summary["rules"]}
    assert "size-measured/gemm.csv" in rules["hidden_size % matmul_tile"]["evidence"]  # the sweep this run wrote
    assert "no measured table" not in json.dumps(summary["rules"])
    assert "expert rates: width" in rules["moe_intermediate_size (tile/wave)"]["evidence"]

    # every measurement stored as CSV and zarr (the same rows), the plots drawn
    with (run_dir / "measurements.csv").open() as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == 4 * (1 + 2)  # a train row and two decode rows per candidate
    stored = read_rows_zarr(run_dir / "measurements.zarr")
    assert [r["candidate"] for r in stored] == [r["candidate"] for r in rows]
    assert [r["seconds"] for r in stored] == pytest.approx([float(r["seconds"]) for r in rows])
    for name in ("moe_pareto.png", "decode_latency.png", "gemm.csv", "sizing_rules.json", "moe_study.csv"):
        assert (run_dir / name).stat().st_size > 0

    # a re-run in the same folder reuses the saved candidates and GEMM sweep (same settings)
    saved = {p.name: p.stat().st_mtime_ns for p in [*(run_dir / "candidates").glob("*.json"), run_dir / "gemm.csv"]}
    proc = run_script(MEASURED, work, timeout=400)
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert (proc.stdout + proc.stderr).count("(saved by an earlier run, reused)") == 4
    again_saved = [*(run_dir / "candidates").glob("*.json"), run_dir / "gemm.csv"]
    assert {p.name: p.stat().st_mtime_ns for p in again_saved} == saved  # nothing measured or swept again
    again = json.loads((run_dir / "moe_width.json").read_text())
    assert [c["measured"] for c in again["candidates"]] == [c["measured"] for c in cands]

    # the README's next line prints the recommendation and the held-out error from the same file
    read = run_script(READ_RESULT, work, timeout=60)
    assert read.returncode == 0, read.stderr[-2000:]
    assert read.stdout.split() == [rec["name"], str(err["median"]), str(err["worst"])]


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (("sizing.measure=true", "sizing.iso_active_params=true"), "sizing.iso_active_params = True"),
        (("sizing.measure=true", "sizing.measurement.layers=0"), "sizing.measurement.layers = 0"),
        (("sizing.measure=true", "sizing.measurement.stepz=2"), "sizing.measurement.stepz"),
        (("sizing.measure=true", "sizing.num_experts=[4]", "sizing.top_k=[1]"), "at least 3 candidates"),
        (("sizing.measure=true", "sizing.context_len=250"), "lower sizing.context_len"),
    ],
)
def test_bad_measured_settings_fail_with_one_line(run_service, overrides, message):
    proc = run_service("size", *overrides, expect_ok=False, timeout=120)
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert proc.returncode == 2 and len(lines) == 1 and message in lines[0], proc.stderr[-2000:]
