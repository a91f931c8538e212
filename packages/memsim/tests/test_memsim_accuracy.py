"""memsim against DRAMSim3's own output on the reference traces: within 3% (in practice: equal), both engines."""

import json
from pathlib import Path

import pytest
from memsim import MemorySystem, TraceFrontend, read_trace
from memsim.compiled import available

REFERENCE = Path(__file__).resolve().parents[3].parent / "shared" / "reference" / "dramsim3"
RUNS = json.loads((REFERENCE / "index.json").read_text())["runs"] if (REFERENCE / "index.json").is_file() else []
EXACT_KEYS = ("num_reads_done", "num_writes_done", "num_read_row_hits", "num_act_cmds", "num_pre_cmds",
              "num_ref_cmds", "num_read_cmds", "num_write_cmds", "num_ondemand_pres", "hbm_dual_cmds")  # fmt: skip
ENGINES = ["python", pytest.param("compiled", marks=pytest.mark.skipif(not available(), reason="numba not installed"))]
ENERGY_KEYS = ("act_energy", "read_energy", "write_energy", "ref_energy", "total_energy", "average_power")


def _rel(a: float, b: float) -> float:
    return abs(a - b) / max(abs(b), 1e-12)


def _differences(ours: object, ref: object, path: str = "") -> list[tuple[str, object, object]]:
    """Every leaf where the two JSON documents differ (floats to 1e-9 relative)."""
    if isinstance(ref, dict):
        if not isinstance(ours, dict) or ours.keys() != ref.keys():
            return [(path, "keys", set(ours) ^ set(ref) if isinstance(ours, dict) else ours)]
        return [d for k in ref for d in _differences(ours[k], ref[k], f"{path}.{k}")]
    if isinstance(ref, float) or isinstance(ours, float):
        return [] if ours == pytest.approx(ref, rel=1e-9, abs=1e-6) else [(path, ours, ref)]
    return [] if ours == ref else [(path, ours, ref)]


@pytest.mark.slow
@pytest.mark.skipif(not RUNS, reason=f"DRAMSim3 reference data not found at {REFERENCE}")
@pytest.mark.parametrize("run", RUNS, ids=[r["stats"].split("/")[1] for r in RUNS])
@pytest.mark.parametrize("engine", ENGINES)
def test_matches_dramsim3(run: dict, engine: str) -> None:
    system = MemorySystem(REFERENCE / run["config"], functional=False)
    TraceFrontend(system, read_trace(REFERENCE / run["trace"])).run(run["cycles"], engine=engine)
    ours = system.stats(run["cycles"])
    ref = json.loads((REFERENCE / run["stats"]).read_text())
    assert ours.keys() == ref.keys()
    for ch in ref:
        # the accuracy target of the issue, per channel
        for key in ("average_read_latency", "average_bandwidth", "num_read_row_hits"):
            assert _rel(ours[ch][key], ref[ch][key]) <= 0.03, (ch, key, ours[ch][key], ref[ch][key])
        # and what we actually achieve: the same counts and energies
        for key in EXACT_KEYS:
            assert ours[ch][key] == ref[ch][key], (ch, key)
        for key in ENERGY_KEYS:
            assert ours[ch][key] == pytest.approx(ref[ch][key], rel=1e-9, abs=1e-6), (ch, key)
        assert ours[ch]["read_latency"] == ref[ch]["read_latency"]
        assert set(ours[ch]) == set(ref[ch]), set(ours[ch]) ^ set(ref[ch])
    # and the whole document: histograms, interarrivals, idle cycles, every energy term
    assert _differences(ours, ref) == []
    total = lambda stats, key: sum(stats[ch][key] for ch in stats)  # noqa: E731
    for key in ("num_reads_done", "num_writes_done", "average_bandwidth", "num_read_row_hits", "num_act_cmds"):
        assert total(ours, key) == pytest.approx(total(ref, key), rel=0.03)
