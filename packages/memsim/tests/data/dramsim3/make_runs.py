"""Make memsim's own DRAMSim3 comparison runs: traces generated here, configs from DRAMSim3's shipped files or
memsim's presets (with [system] options), run by DRAMSim3's `dramsim3main`, condensed to small JSON files.

Usage (see README.md here): python make_runs.py --dramsim3 PATH/dramsim3main --shipped PATH/configs [--only GROUP]
The tests regenerate every trace from the parameters stored with each case and check its sha256 first.
"""

import argparse
import hashlib
import json
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[2] / "src"))
sys.path.insert(1, str(HERE.parents[3] / "zaya-config" / "src"))

from memsim.reference_runs import CONDENSED_KEYS, case_spec, case_trace, condense  # noqa: E402
from memsim.trace import format_trace  # noqa: E402
from zaya_config.atomic import write_text_atomic  # noqa: E402

RANDOM = {"kind": "random", "n": 2000, "seed": 7, "write_fraction": 0.3, "max_gap": 6, "locality": 0.3}
STREAM = {"kind": "stream", "n": 2000, "seed": 7, "write_fraction": 0.3, "max_gap": 2}
SATURATING = {"kind": "random", "n": 4000, "seed": 11, "write_fraction": 0.4, "max_gap": 1, "locality": 0.1}


def shipped_cases(shipped: Path) -> list[dict]:
    """Random and streaming traffic (reads and writes) on every config DRAMSim3 ships, HMC aside."""
    cases = []
    for path in sorted(shipped.glob("*.ini")):
        if path.name.startswith("HMC"):
            continue
        for trace in (RANDOM, STREAM):
            cases.append({"id": f"{trace['kind']}__{path.stem}", "config": {"shipped": path.name}, "trace": trace,
                          "cycles": 40_000})  # fmt: skip
    return cases


def option_cases() -> list[dict]:
    """DRAMSim3's [system] options, one at a time, on presets with two ranks (DDR4) and with one (LPDDR4, HBM2)."""
    options = {
        "unified_queue": {"unified_queue": "true"},
        "aggressive_precharging": {"aggressive_precharging_enabled": "true"},
        "write_buf_size": {"write_buf_size": "8"},
        "close_page": {"row_buf_policy": "CLOSE_PAGE"},
        "per_rank": {"queue_structure": "PER_RANK"},
        "rank_staggered": {"refresh_policy": "RANK_LEVEL_STAGGERED"},
        "rank_simultaneous": {"refresh_policy": "RANK_LEVEL_SIMULTANEOUS"},
        "bank_staggered": {"refresh_policy": "BANK_LEVEL_STAGGERED"},
    }
    cases = []
    for preset in ("ddr4_8gb_x8_3200", "lpddr4_8gb_x16_2400", "hbm2_8gb_x128"):
        for name, system in options.items():
            for trace in (RANDOM, SATURATING):
                cases.append({"id": f"{name}__{trace['kind']}{trace['n']}__{preset}",
                              "config": {"preset": preset, "system": system}, "trace": trace, "cycles": 120_000})  # fmt: skip
    return cases


def generator_cases() -> list[dict]:
    """DRAMSim3's own address generators (`dramsim3main -s random|stream`) on shipped configs."""
    names = ("DDR4_8Gb_x8_3200", "HBM2_8Gb_x128", "LPDDR4_8Gb_x16_2400", "GDDR6_8Gb_x16", "DDR3_8Gb_x8_1600")
    # HBM2 streams ~0.9 triples per cycle: 40k cycles pass the 2 MiB point where StreamCPU draws new bases
    return [{"id": f"{kind}__{name}", "config": {"shipped": f"{name}.ini"}, "generator": kind,
             "cycles": 40_000 if (kind, name) == ("stream", "HBM2_8Gb_x128") else 20_000}
            for kind in ("random", "stream") for name in names]  # fmt: skip


def wrap_cases() -> list[dict]:
    """64-bit addresses (random bits above the capacity), which DRAMSim3 wraps; memsim with wrap=True (--wrap)."""
    trace = {**RANDOM, "high_bits": True}
    return [{"id": f"random64__{name}", "config": {"shipped": f"{name}.ini"}, "trace": trace, "cycles": 40_000}
            for name in ("DDR4_8Gb_x8_3200", "HBM2_8Gb_x128")]  # fmt: skip


GROUPS = {"shipped_traces": shipped_cases, "system_options": lambda _: option_cases(),
          "generators": lambda _: generator_cases(), "wrap": lambda _: wrap_cases()}  # fmt: skip


def run_case(case: dict, dramsim3: Path, shipped: Path, work: Path) -> dict:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the shipped files' defaults and unmodelled keys
        spec = case_spec(case, shipped, work)
    shipped_config = "shipped" in case["config"]
    ini = shipped / case["config"]["shipped"] if shipped_config else work / f"{case['id']}.ini"
    out = work / case["id"]
    out.mkdir()
    cmd = [str(dramsim3), str(ini), "-c", str(case["cycles"]), "-o", str(out)]
    record = dict(case)
    if "trace" in case:
        trace = case_trace(case, spec)
        text = format_trace(trace)
        path = work / f"{case['id']}.trace"
        path.write_text(text)
        cmd += ["-t", str(path)]
        record["trace"] = {**case["trace"], "sha256": hashlib.sha256(text.encode()).hexdigest()}
    else:
        cmd += ["-s", case["generator"]]
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, capture_output=True, cwd=work)
    record["dramsim3_wall_s"] = round(time.perf_counter() - t0, 4)
    config = f"configs/{ini.name}" if shipped_config else ini.name
    record["command"] = " ".join(["dramsim3main", config, *cmd[2:4], "-o OUT", *cmd[6:]]).replace(f"{work}/", "")
    record["stats"] = condense(json.loads((out / "dramsim3.json").read_text()))
    return record


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dramsim3", type=Path, required=True, help="DRAMSim3's dramsim3main binary")
    parser.add_argument("--shipped", type=Path, required=True, help="DRAMSim3's configs/ folder")
    parser.add_argument("--commit", default="29817593", help="DRAMSim3 commit the binary was built from")
    parser.add_argument("--only", choices=sorted(GROUPS), action="append")
    args = parser.parse_args()
    for group in args.only or sorted(GROUPS):
        cases = GROUPS[group](args.shipped)
        with tempfile.TemporaryDirectory() as tmp:
            records = [run_case(case, args.dramsim3, args.shipped, Path(tmp)) for case in cases]
        doc = {"tool": f"DRAMSim3 dramsim3main at {args.commit}", "keys": list(CONDENSED_KEYS), "cases": records}
        write_text_atomic(HERE / f"{group}.json", json.dumps(doc, indent=0, sort_keys=False) + "\n")
        print(f"{group}: {len(records)} runs")


if __name__ == "__main__":
    main()
