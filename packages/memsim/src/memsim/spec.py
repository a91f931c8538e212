"""A DRAM standard as data: organisation, timings, power and controller settings of one memory system.

The keys are DRAMSim3's (sections `dram_structure`, `timing`, `power`, `system`, `other`), so its `.ini`
files load as they are and the same mapping works as a Hydra config. Derived values (ranks from the
channel size, burst cycles, request size, the protocol's notion of a column) follow DRAMSim3's rules,
because the accuracy target is DRAMSim3 itself. Optional keys take DRAMSim3's defaults; the keys that
define a part (CL, tRCD, tRP, ...) are required, and a missing one is an error naming it.
"""

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memsim.errors import MemsimError
from memsim.ini_file import read_ini

# protocol -> family; the family decides burst length rules, column meaning and which timing keys apply
PROTOCOLS: dict[str, str] = {
    "DDR3": "DDR",
    "DDR4": "DDR",
    "DDR5": "DDR",
    "LPDDR": "LPDDR",
    "LPDDR3": "LPDDR",
    "LPDDR4": "LPDDR",
    "LPDDR5": "LPDDR",
    "GDDR5": "GDDR",
    "GDDR5X": "GDDR",
    "GDDR6": "GDDR",
    "HBM": "HBM",
    "HBM2": "HBM",
    "HBM3": "HBM",
}
# data beats per clock of the command clock: DRAMSim3 divides BL by this to get burst cycles
_BEATS_PER_CLOCK = {"GDDR5": 4, "GDDR5X": 8, "GDDR6": 16}

_REQUIRED_TIMING = ("tCK", "CL", "CWL", "tRP", "tRAS", "tRFC", "tREFI", "tRRD_S", "tRRD_L", "tWTR_S", "tWTR_L",
                    "tFAW", "tWR", "tCCD_S", "tCCD_L")  # fmt: skip
_REQUIRED_ACT_TO_CAS = {"DDR": ("tRCD",), "LPDDR": ("tRCD",), "GDDR": ("tRCDRD", "tRCDWR"), "HBM": ("tRCDRD", "tRCDWR")}
# DRAMSim3's defaults for keys a part may leave out
_TIMING_DEFAULTS: dict[str, float] = {
    "AL": 0, "tRTRS": 2, "tRTP": 5, "tRCD": 10, "tRCDRD": 24, "tRCDWR": 20, "tCKE": 6, "tCKESR": 12, "tXS": 432,
    "tXP": 8, "tRFCb": 20, "tREFIb": 1950, "tRPRE": 1, "tWPRE": 1, "tPPD": 0, "t32AW": 330,
}  # fmt: skip
_POWER_DEFAULTS: dict[str, float] = {
    "VDD": 1.2, "IDD0": 48, "IDD2P": 25, "IDD2N": 34, "IDD3P": 37, "IDD3N": 43, "IDD4W": 123, "IDD4R": 135,
    "IDD5AB": 250, "IDD5PB": 5, "IDD6x": 31,
}  # fmt: skip
QUEUE_STRUCTURES = ("PER_BANK", "PER_RANK")
REFRESH_POLICIES = ("RANK_LEVEL_STAGGERED", "RANK_LEVEL_SIMULTANEOUS", "BANK_LEVEL_STAGGERED")
SCHEDULERS = ("frfcfs", "fcfs")


def _int(section: str, key: str, value: Any) -> int:
    """An integer the way inih's strtol reads it: a leading number, the rest ignored."""
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    match = re.match(r"\s*([+-]?(0x[0-9a-fA-F]+|\d+))", str(value))
    if not match:
        raise MemsimError(f"config [{section}] {key} = {value!r} is not an integer; give a whole number")
    return int(match.group(1), 0)


def _float(section: str, key: str, value: Any) -> float:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    match = re.match(r"\s*([+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?)", str(value))
    if not match:
        raise MemsimError(f"config [{section}] {key} = {value!r} is not a number")
    return float(match.group(1))


def _bool(value: Any, default: bool) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("true", "yes", "on", "1"):
        return True
    if text in ("false", "no", "off", "0"):
        return False
    return default


def _log2(section: str, key: str, value: int) -> int:
    if value < 1 or value & (value - 1):
        raise MemsimError(f"config [{section}] {key} = {value} must be a power of two")
    return value.bit_length() - 1


@dataclass(frozen=True)
class DramSpec:
    """Everything the controller, the timing table, the power model and the checker need about a part."""

    name: str
    protocol: str
    family: str
    channels: int
    ranks: int
    bankgroups: int
    banks_per_group: int
    rows: int
    columns: int  # physical columns of device_width bits (DRAMSim3's convention)
    device_width: int
    BL: int
    burst_cycle: int
    bus_width: int
    devices_per_rank: int
    channel_size_mb: int
    request_size_bytes: int
    pseudo_channels: int
    timing: dict[str, float] = field(repr=False)
    power: dict[str, float] = field(repr=False)
    address_mapping: str = "rochrababgco"
    queue_structure: str = "PER_BANK"
    row_buf_policy: str = "OPEN_PAGE"
    refresh_policy: str = "RANK_LEVEL_STAGGERED"
    scheduler: str = "frfcfs"
    cmd_queue_size: int = 8
    trans_queue_size: int = 32
    write_drain_threshold: int = 8
    unified_queue: bool = False
    dual_command_issue: bool = False
    epoch_period: int = 100000

    @property
    def banks(self) -> int:
        return self.bankgroups * self.banks_per_group

    @property
    def capacity_bytes(self) -> int:
        """Bytes the address mapping reaches (DRAMSim3's channel_size can disagree for HBM/GDDR columns)."""
        fields = (self.channels, self.ranks, self.bankgroups, self.banks_per_group, self.rows, self.columns)
        bits = sum(n.bit_length() - 1 for n in fields) - (self.BL.bit_length() - 1)
        return self.request_size_bytes << bits

    def t(self, key: str) -> int:
        """A timing value in command-clock cycles."""
        return int(self.timing[key])

    @property
    def tCK_ns(self) -> float:
        return float(self.timing["tCK"])

    @property
    def is_gddr(self) -> bool:
        return self.family == "GDDR"

    @property
    def is_hbm(self) -> bool:
        return self.family == "HBM"


def spec_from_sections(sections: Mapping[str, Mapping[str, Any]], name: str = "memsim") -> DramSpec:
    """Build a spec from DRAMSim3-style sections (an ini file or a Hydra/YAML mapping with the same keys)."""
    structure = dict(sections.get("dram_structure", {}))
    timing_in = dict(sections.get("timing", {}))
    power_in = dict(sections.get("power", {}))
    system = dict(sections.get("system", {}))
    other = dict(sections.get("other", {}))
    if not structure:
        raise MemsimError(f"config {name}: section [dram_structure] is missing; it holds protocol, banks, rows ...")

    protocol = str(structure.get("protocol", "DDR3")).strip()
    if protocol not in PROTOCOLS:
        raise MemsimError(f"config {name}: unknown protocol {protocol!r}; allowed: {', '.join(PROTOCOLS)}")
    family = PROTOCOLS[protocol]

    def s_int(key: str, default: int) -> int:
        return _int("dram_structure", key, structure.get(key, default))

    bankgroups, banks_per_group = s_int("bankgroups", 2), s_int("banks_per_group", 2)
    if not _bool(structure.get("bankgroup_enable", True), True):
        banks_per_group, bankgroups = banks_per_group * bankgroups, 1
    rows, columns, device_width = s_int("rows", 1 << 16), s_int("columns", 1 << 10), s_int("device_width", 8)
    bl = s_int("BL", 8)
    pseudo_channels = s_int("pseudo_channels", 1)
    burst_cycle = 0 if bl == 0 else bl // _BEATS_PER_CLOCK.get(protocol, 2)
    if bl == 0:
        bl = 4 if family == "HBM" else 8
    if family == "GDDR":
        columns *= bl
    elif family == "HBM":
        columns *= 2

    sys_int = lambda key, default: _int("system", key, system.get(key, default))  # noqa: E731
    channels = sys_int("channels", 1) * pseudo_channels
    bus_width = sys_int("bus_width", 64) // pseudo_channels
    channel_size = sys_int("channel_size", 1024) // pseudo_channels
    devices_per_rank = max(1, bus_width // device_width)
    page_size = columns * device_width // 8
    megs_per_rank = page_size * (rows // 1024) // 1024 * bankgroups * banks_per_group * devices_per_rank
    if megs_per_rank <= 0:
        raise MemsimError(f"config {name}: rows/columns/device_width give an empty rank; check [dram_structure]")
    if megs_per_rank > channel_size:
        ranks, channel_size = 1, megs_per_rank  # DRAMSim3 warns and uses one rank of the device's size
    else:
        ranks = channel_size // megs_per_rank
        channel_size = ranks * megs_per_rank

    for key in (*_REQUIRED_TIMING, *_REQUIRED_ACT_TO_CAS[family]):
        if key not in timing_in:
            raise MemsimError(f"config {name}: timing key {key} is missing from [timing]; {protocol} needs it")
    timing: dict[str, float] = {}
    for key, value in {**_TIMING_DEFAULTS, **timing_in}.items():
        timing[key] = _float("timing", key, value) if key == "tCK" else _int("timing", key, value)
    timing["tRC"] = timing["tRAS"] + timing["tRP"]
    timing["RL"] = timing["AL"] + timing["CL"]
    timing["WL"] = timing["AL"] + timing["CWL"]
    timing["read_delay"] = timing["RL"] + burst_cycle
    timing["write_delay"] = timing["WL"] + burst_cycle
    timing["burst_cycle"] = burst_cycle
    power = {key: _float("power", key, value) for key, value in {**_POWER_DEFAULTS, **power_in}.items()}

    mapping = str(system.get("address_mapping", "chrobabgraco")).strip()
    queue_structure = str(system.get("queue_structure", "PER_BANK")).strip()
    if queue_structure not in QUEUE_STRUCTURES:
        raise MemsimError(f"config {name}: queue_structure {queue_structure!r}; allowed: {', '.join(QUEUE_STRUCTURES)}")
    refresh_policy = str(system.get("refresh_policy", "RANK_LEVEL_STAGGERED")).strip()
    if refresh_policy not in REFRESH_POLICIES:
        raise MemsimError(f"config {name}: refresh_policy {refresh_policy!r}; allowed: {', '.join(REFRESH_POLICIES)}")
    scheduler = str(system.get("scheduler", "frfcfs")).strip().lower()
    if scheduler not in SCHEDULERS:
        raise MemsimError(f"config {name}: scheduler {scheduler!r}; allowed: {', '.join(SCHEDULERS)}")
    # DRAMSim3: any row policy other than CLOSE_PAGE silently means open page
    row_policy = "CLOSE_PAGE" if str(system.get("row_buf_policy", "OPEN_PAGE")).strip() == "CLOSE_PAGE" else "OPEN_PAGE"
    for key, value in (("bankgroups", bankgroups), ("banks_per_group", banks_per_group), ("rows", rows),
                       ("columns", columns), ("BL", bl), ("channels", channels), ("ranks", ranks)):  # fmt: skip
        _log2("dram_structure", key, value)
    request_size = bus_width // 8 * bl
    _log2("system", "bus_width/8*BL (request size)", request_size)
    if math.log2(columns) < math.log2(bl):
        raise MemsimError(f"config {name}: columns ({columns}) smaller than BL ({bl})")
    return DramSpec(
        name=name, protocol=protocol, family=family, channels=channels, ranks=ranks, bankgroups=bankgroups,
        banks_per_group=banks_per_group, rows=rows, columns=columns, device_width=device_width, BL=bl,
        burst_cycle=burst_cycle, bus_width=bus_width, devices_per_rank=devices_per_rank, channel_size_mb=channel_size,
        request_size_bytes=request_size, pseudo_channels=pseudo_channels, timing=timing, power=power,
        address_mapping=mapping, queue_structure=queue_structure, row_buf_policy=row_policy,
        refresh_policy=refresh_policy, scheduler=scheduler, cmd_queue_size=sys_int("cmd_queue_size", 16),
        trans_queue_size=sys_int("trans_queue_size", 32), write_drain_threshold=sys_int("write_drain_threshold", 8),
        unified_queue=_bool(system.get("unified_queue", False), False),
        dual_command_issue=family == "HBM" and _bool(structure.get("hbm_dual_cmd", True), True),
        epoch_period=_int("other", "epoch_period", other.get("epoch_period", 100000)),
    )  # fmt: skip


def load_spec(source: str | Path | Mapping[str, Any]) -> DramSpec:
    """A spec from a DRAMSim3 .ini path, a preset name (`zaya memsim configs`), or a sections mapping."""
    if isinstance(source, Mapping):
        return spec_from_sections(source, name=str(source.get("name", "memsim")))
    path = Path(source)
    if path.suffix == ".ini" or path.is_file():
        return spec_from_sections(read_ini(path), name=path.stem)
    from memsim.presets import preset_sections

    return spec_from_sections(preset_sections(str(source)), name=str(source))
