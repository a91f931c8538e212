"""The cost model fitted to measurements, and the measurement benchmark at smoke size on this CPU."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
from manta.cost_model import check, fit_costs
from manta.errors import MantaError

BENCH = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_costs.py"
RECORDED = sorted((BENCH.parent / "results").glob("costs-*/costs.json"))


def test_recorded_costs_include_the_tiny_world_on_cpu():
    archs = {r["arch"] for path in RECORDED for r in json.loads(path.read_text())["measurements"]}
    assert "tiny-world" in archs


@pytest.mark.parametrize("path", RECORDED, ids=[p.parent.name for p in RECORDED])
def test_the_fitted_cost_model_predicts_recorded_measurements_within_20_percent(path):
    recorded = json.loads(path.read_text())
    rows = [{k: r[k] for k in ("arch", "ranks", "peak_bytes", "seconds_per_image")} for r in recorded["measurements"]]
    assert {len(r["ranks"]) for r in rows} == {0, 1, 2, 3} and {max(r["ranks"], default=4) for r in rows} >= {4, 128}
    checked = check(fit_costs(rows), rows)
    worst = max(max(r["peak_bytes_error"], r["seconds_per_image_error"]) for r in checked)
    assert worst <= 0.20, worst


def test_fit_recovers_a_linear_cost_and_reports_errors():
    rows = []
    for n in range(4):
        for rank in (4, 16, 64, 128):
            ranks = [rank] * n
            rows.append(
                {
                    "arch": "x",
                    "ranks": ranks,
                    "peak_bytes": 4e9 + 2e6 * n + 1e5 * sum(ranks),
                    "seconds_per_image": 1.5 + 0.02 * n + 0.001 * sum(ranks),
                }
            )
    model = fit_costs(rows)["x"]
    assert model["peak_bytes"].per_rank == pytest.approx(1e5, rel=1e-6)
    assert model["seconds_per_image"].base == pytest.approx(1.5, rel=1e-6)
    assert max(r["seconds_per_image_error"] for r in check({"x": model}, rows)) < 1e-9
    with pytest.raises(MantaError, match="at least 3"):
        fit_costs(rows[:2])


@pytest.mark.slow
def test_bench_costs_smoke_measures_and_fits(tmp_path):
    result = subprocess.run(
        [sys.executable, str(BENCH), "--smoke", "--repeats", "1", "--out", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    costs = json.loads((tmp_path / "costs.json").read_text())
    assert costs["smoke"] and set(costs["model"]) == {"sd15", "sdxl", "tiny-world"}
    rows = costs["measurements"]
    assert {len(r["ranks"]) for r in rows} == {0, 1, 3}
    for arch in ("sd15", "sdxl"):  # CPU memory = weights held: grows with every LoRA's rank
        mine = sorted((sum(r["ranks"]), r["peak_bytes"]) for r in rows if r["arch"] == arch)
        assert mine[0][1] < mine[-1][1]
    assert (tmp_path / "costs.png").read_bytes()[:4] == b"\x89PNG"


def test_the_recorded_h200_model_is_the_refit_of_its_recorded_runs(tmp_path):
    """BENCHMARKS.md's refit command, as written there, reproduces `results/costs-h200/costs.json`."""
    runs = BENCH.parent / "results" / "costs-h200" / "runs"
    result = subprocess.run(
        [sys.executable, str(BENCH), "--out", str(tmp_path), "--from-runs",
         f"sd15={runs / '2026-12-04T1802-sd15-repeats5.json'}", f"sdxl={runs / '2026-12-04T1747-sd15-sdxl-repeats3.json'}"],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    refit = json.loads((tmp_path / "costs.json").read_text())
    recorded = json.loads((BENCH.parent / "results" / "costs-h200" / "costs.json").read_text())
    assert refit["model"].keys() == recorded["model"].keys()
    for arch in ("sd15", "sdxl"):
        for target, coefs in recorded["model"][arch].items():
            assert refit["model"][arch][target] == pytest.approx(coefs, rel=1e-9)
        assert refit["runs"][arch]["date"] == recorded["runs"][arch]["date"]
    assert (tmp_path / "costs.png").stat().st_size > 0


def test_refit_names_a_malformed_source(tmp_path):
    result = subprocess.run([sys.executable, str(BENCH), "--out", str(tmp_path), "--from-runs", "sd15"],
                            capture_output=True, text=True, timeout=300)  # fmt: skip
    assert result.returncode != 0 and "write ARCH=PATH" in result.stderr


def test_the_shipped_catalogs_costs_are_the_fitted_models_and_carry_no_prices():
    """Every SD 1.5 / SDXL checkpoint and LoRA of the example and everyday catalogs has the VRAM and per-step
    latency the recorded H200 model predicts at its rank (BENCHMARKS' `catalog_costs.py --check`), and no price."""
    from manta.catalog import load_catalog
    from manta.cost_model import entry_costs, load_recorded

    models, steps, devices = load_recorded(BENCH.parent / "results" / "costs-h200" / "costs.json")
    assert devices == {"sd15": "NVIDIA H200", "sdxl": "NVIDIA H200"}
    for name in ("example", "everyday"):
        entries = [e for e in load_catalog(name).entries if e.base_family in models]
        assert len(entries) >= 30
        for e in entries:
            vram, ms = entry_costs(models[e.base_family], steps[e.base_family], e.rank if e.is_adapter else None)
            assert (e.vram_bytes, e.step_latency_ms) == (vram, ms) and e.price_per_image == 0, e.id
    sd15 = load_catalog("example")["sd15-base"]
    assert sd15.vram_bytes == pytest.approx(2.848e9, rel=1e-3)  # 2.65 GiB measured, not the 3.6 GB once written
    lora = load_catalog("example")["watercolor-wash"]
    assert lora.step_latency_ms / sd15.step_latency_ms == pytest.approx(0.51, abs=0.02)  # +51% per LoRA, measured
    script = BENCH.parent / "catalog_costs.py"
    done = subprocess.run([sys.executable, str(script), "--check"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and "stale: none" in done.stdout, done.stdout + done.stderr
