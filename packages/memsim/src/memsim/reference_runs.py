"""DRAMSim3 comparison cases: how each case's config and trace are built, and which statistics are compared.

A case (as stored in `tests/data/dramsim3/*.json`) names its config, either a file DRAMSim3 ships
(`{"shipped": "DDR4_8Gb_x8_3200.ini"}`) or a memsim preset with `[system]` options
(`{"preset": "ddr4_8gb_x8_3200", "system": {"unified_queue": "true"}}`), and its traffic, either a trace
from `memsim.fuzz` (`{"kind": "random", "n": 2000, "seed": 7, ...}`) or one of DRAMSim3's generators
(`"generator": "random"`). The script that made the runs and the tests that replay them build both from
here, so they cannot drift apart.
"""

from pathlib import Path
from typing import Any

from memsim.fuzz import random_trace, stream_trace
from memsim.ini_file import format_ini
from memsim.presets import preset_sections
from memsim.spec import DramSpec, load_spec
from memsim.trace import Trace

# per-channel statistics kept from DRAMSim3's output (the issue's targets first)
CONDENSED_KEYS = (
    "num_reads_done", "num_writes_done", "average_read_latency", "average_bandwidth", "num_read_row_hits",
    "num_write_row_hits", "num_act_cmds", "num_pre_cmds", "num_ref_cmds", "num_refb_cmds", "num_read_cmds",
    "num_write_cmds", "num_ondemand_pres", "hbm_dual_cmds", "num_srefe_cmds", "num_srefx_cmds", "total_energy",
)  # fmt: skip


def case_ini_text(case: dict[str, Any]) -> str:
    """The .ini text of a preset case: the preset with the case's [system] options."""
    sections = preset_sections(case["config"]["preset"])
    sections["system"] = {**sections["system"], **case["config"].get("system", {})}
    return format_ini(sections)


def case_spec(case: dict[str, Any], shipped: Path, work: Path) -> DramSpec:
    """The spec DRAMSim3 ran (dramsim3 mode); preset cases are written to `work` as the .ini DRAMSim3 read."""
    config = case["config"]
    if "shipped" in config:
        return load_spec(shipped / config["shipped"], mode="dramsim3")
    path = work / f"{case['id']}.ini"
    path.write_text(case_ini_text(case))
    return load_spec(path, mode="dramsim3")


def case_trace(case: dict[str, Any], spec: DramSpec) -> Trace:
    """The trace of a trace case, regenerated from its parameters."""
    params = {k: v for k, v in case["trace"].items() if k not in ("kind", "n", "sha256")}
    make = {"random": random_trace, "stream": stream_trace}[case["trace"]["kind"]]
    return make(spec, case["trace"]["n"], **params)


def condense(stats: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The compared statistics of a DRAMSim3-style stats document, per channel."""
    return {ch: {k: values[k] for k in CONDENSED_KEYS} for ch, values in stats.items()}
