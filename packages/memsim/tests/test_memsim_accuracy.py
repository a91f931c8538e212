"""memsim against DRAMSim3's own output on the reference traces: within 3% (in practice: equal), both engines.

Two sets of DRAMSim3 runs: `../shared/reference/dramsim3` (5 traces on 4 configs) and
`../shared/reference/dramsim3-configs` (a streaming trace on every config DRAMSim3 ships; HMC is not modelled).
"""

import json
import warnings
from pathlib import Path

import pytest
from memsim import MemorySystem, TraceFrontend, read_trace
from memsim.compiled import available

SHARED = Path(__file__).resolve().parents[3].parent / "shared" / "reference"  # as conftest.py
REFERENCE, SHIPPED = SHARED / "dramsim3", SHARED / "dramsim3-configs"


def _runs(folder: Path) -> list[dict]:
    index = folder / "index.json"
    return json.loads(index.read_text())["runs"] if index.is_file() else []


RUNS = _runs(REFERENCE)
SHIPPED_RUNS = [r for r in _runs(SHIPPED) if "/HMC" not in r["config"]]
# the Python engine on one run per kind of config (the compiled engine, checked equal to it, runs them all)
PYTHON_SAMPLE = ("DDR3_1Gb_x8_1333", "DDR4_4Gb_x16_2400_2", "LPDDR3_8Gb_x32_1600", "GDDR5X_8Gb_x32", "HBM_4Gb_x128",
                 "ST-2.0x", "lpddr_2Gb_x16", "ddr3_debug", "ddr4_debug")  # fmt: skip
EXACT_KEYS = ("num_reads_done", "num_writes_done", "num_read_row_hits", "num_act_cmds", "num_pre_cmds",
              "num_ref_cmds", "num_read_cmds", "num_write_cmds", "num_ondemand_pres", "hbm_dual_cmds")  # fmt: skip
ENGINES = [
    "python",
    pytest.param(
        "compiled",
        marks=pytest.mark.skipif(not available(), reason="memsim's C++ engine cannot be built here (no C++ compiler)"),
    ),
]
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
    _assert_matches(REFERENCE, run, engine)


def _shipped_params() -> list:
    params = []
    for run in SHIPPED_RUNS:
        name = run["config"].split("/")[1].removesuffix(".ini")
        params.append(pytest.param(run, "compiled", id=f"{name}-compiled",
                                   marks=pytest.mark.skipif(not available(), reason="memsim's C++ engine cannot be built here (no C++ compiler)")))  # fmt: skip
        if name in PYTHON_SAMPLE:
            params.append(pytest.param(run, "python", id=f"{name}-python"))
    return params


@pytest.mark.skipif(not SHIPPED_RUNS, reason=f"DRAMSim3's shipped configs not found at {SHIPPED}")
@pytest.mark.parametrize(("run", "engine"), _shipped_params())
def test_every_shipped_config_matches_dramsim3(run: dict, engine: str) -> None:
    """Every config DRAMSim3 ships (HMC aside), read with its rules, gives DRAMSim3's statistics."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the shipped files' defaults and unmodelled keys (tested elsewhere)
        _assert_matches(SHIPPED, run, engine)


def _assert_matches(folder: Path, run: dict, engine: str) -> None:
    system = MemorySystem(folder / run["config"], functional=False)
    TraceFrontend(system, read_trace(folder / run["trace"])).run(run["cycles"], engine=engine)
    ours = system.stats(run["cycles"])
    ref = json.loads((folder / run["stats"]).read_text())
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
