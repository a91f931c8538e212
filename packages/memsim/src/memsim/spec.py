"""A DRAM standard as data: organisation, timings, power and controller settings of one memory system.

The keys are DRAMSim3's (sections `dram_structure`, `timing`, `power`, `system`, `other`), so its `.ini`
files load as they are and the same mapping works as a Hydra config. Derived values (ranks from the
channel size, burst cycles, request size, the protocol's notion of a column) follow DRAMSim3's rules,
because the accuracy target is DRAMSim3 itself. Keys are read as DRAMSim3 reads them: a missing, empty or
unreadable value takes DRAMSim3's default, and every default that matters, every ignored key and every
problem is reported (`memsim.config_report`); `strict=True` makes the problems errors.
"""

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memsim.config_keys import KEYS, KeyContext
from memsim.config_reader import ConfigReader
from memsim.config_report import PROBLEM, ConfigNotice, report
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
# (LPDDR5: WCK at 4x the command clock, DDR: 8 beats; HBM3: 4 beats, as Ramulator 2's nBL = 2 for BL8)
_BEATS_PER_CLOCK = {"GDDR5": 4, "GDDR5X": 8, "GDDR6": 16, "LPDDR5": 8, "HBM3": 4}
_TIMING_KEYS = list(KEYS["timing"])
_POWER_KEYS = [k.name for k in KEYS["power"].values()]


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
    mode: str = "jedec"  # "dramsim3": reproduce DRAMSim3 where it departs from JEDEC; "jedec": JEDEC behaviour
    write_buf_size: int = 0  # write buffer entries (0: trans_queue_size, as DRAMSim3)
    aggressive_precharging: bool = False
    enable_self_refresh: bool = False
    sref_threshold: int = 1000
    enable_power_down: bool = False
    pd_threshold: int = 20
    notices: tuple[ConfigNotice, ...] = field(default=(), repr=False, compare=False)

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


def spec_from_sections(sections: Mapping[str, Any], name: str = "memsim", mode: str | None = None,
                       strict: bool = False, lines: Mapping[tuple[str, str], int] | None = None,
                       default_mode: str = "jedec", source: str | None = None,
                       extra_notices: tuple[ConfigNotice, ...] = ()) -> DramSpec:  # fmt: skip
    """Build a spec from DRAMSim3-style sections (an ini file's or a Hydra/YAML mapping with the same keys).

    Keys are read as DRAMSim3 reads them (`memsim.config_reader`); what was defaulted, ignored or wrong is
    reported as `MemsimConfigWarning`s, and with `strict` a problem (unknown key, misspelt value) is an error.
    `mode` overrides the config's `[system] mode`, whose default is `default_mode`; `source` (default:
    `name`) names the config in notices, `extra_notices` are reported with the reader's own.
    """
    cfg = ConfigReader(sections, source=source or name, lines=lines)
    cfg.notices.extend(extra_notices)
    if not any(s.lower() == "dram_structure" for s in sections):
        raise MemsimError(f"config {name}: section [dram_structure] is missing; it holds protocol, banks, rows ...")
    protocol = str(cfg.get("dram_structure", "protocol"))
    if protocol == "HMC":
        raise MemsimError(f"config {name}: protocol HMC (Hybrid Memory Cube) is not modelled: an HMC is a "
                          "packet-switched cube of vaults behind links and a crossbar, not a DRAM channel; "
                          "use a DDR, LPDDR, GDDR or HBM config")  # fmt: skip
    if protocol not in PROTOCOLS:
        raise MemsimError(f"config {name}: unknown protocol {protocol!r}; allowed: {', '.join(PROTOCOLS)}")
    family = PROTOCOLS[protocol]

    def s_int(key: str) -> int:
        return int(cfg.get("dram_structure", key))

    bankgroups, banks_per_group = s_int("bankgroups"), s_int("banks_per_group")
    if not cfg.get("dram_structure", "bankgroup_enable"):
        banks_per_group, bankgroups = banks_per_group * bankgroups, 1
    rows, columns, device_width = s_int("rows"), s_int("columns"), s_int("device_width")
    bl = s_int("BL")
    cfg.get("dram_structure", "num_dies")
    pseudo_channels = s_int("pseudo_channels")
    burst_cycle = 0 if bl == 0 else bl // _BEATS_PER_CLOCK.get(protocol, 2)
    if bl == 0:
        bl = 4 if family == "HBM" else 8
    if family == "GDDR":
        columns *= bl
    elif family == "HBM":
        columns *= 2

    sys_int = lambda key: int(cfg.get("system", key))  # noqa: E731
    channels = sys_int("channels") * pseudo_channels
    bus_width = sys_int("bus_width") // pseudo_channels
    channel_size = sys_int("channel_size") // pseudo_channels
    if device_width <= 0 or bus_width < device_width:
        raise MemsimError(f"config {name}: bus_width {bus_width} and device_width {device_width} give no device "
                          "per rank; check [system] bus_width and [dram_structure] device_width")  # fmt: skip
    devices_per_rank = bus_width // device_width
    page_size = columns * device_width // 8
    megs_per_rank = page_size * (rows // 1024) // 1024 * bankgroups * banks_per_group * devices_per_rank
    if megs_per_rank <= 0:
        raise MemsimError(f"config {name}: rows/columns/device_width give an empty rank; check [dram_structure]")
    if megs_per_rank > channel_size:
        ranks, channel_size = 1, megs_per_rank  # DRAMSim3 warns and uses one rank of the device's size
    else:
        ranks = channel_size // megs_per_rank
        channel_size = ranks * megs_per_rank

    timing: dict[str, float] = {key: cfg.get("timing", key) for key in _TIMING_KEYS}
    timing["tRC"] = timing["tRAS"] + timing["tRP"]
    timing["tRFM"] = timing["tRFM"] or timing["tRFC"]
    timing["RL"] = timing["AL"] + timing["CL"]
    timing["WL"] = timing["AL"] + timing["CWL"]
    timing["read_delay"] = timing["RL"] + burst_cycle
    timing["write_delay"] = timing["WL"] + burst_cycle
    timing["burst_cycle"] = burst_cycle
    power = {key: float(cfg.get("power", key)) for key in _POWER_KEYS}

    mapping = str(cfg.get("system", "address_mapping")).strip()
    queue_structure = cfg.choice("system", "queue_structure", fallback=None)
    refresh_policy = cfg.choice("system", "refresh_policy", fallback=None)
    scheduler = cfg.choice("system", "scheduler", fallback=None)
    row_policy = cfg.choice("system", "row_buf_policy", fallback="OPEN_PAGE")  # DRAMSim3: not CLOSE_PAGE = open
    config_mode = cfg.choice("system", "mode", fallback=None) or default_mode
    if mode is not None and mode not in ("dramsim3", "jedec"):
        raise MemsimError(f"mode {mode!r}; allowed: dramsim3, jedec")
    write_buf_given = cfg.has("system", "write_buf_size")
    write_buf_size = sys_int("write_buf_size")
    options = {
        "unified_queue": bool(cfg.get("system", "unified_queue")),
        "aggressive_precharging": bool(cfg.get("system", "aggressive_precharging_enabled")),
        "enable_self_refresh": bool(cfg.get("system", "enable_self_refresh")),
        "sref_threshold": sys_int("sref_threshold"),
        "enable_power_down": bool(cfg.get("system", "enable_power_down")),
        "pd_threshold": sys_int("pd_threshold"),
    }
    for key in ("cmd_queue_size", "trans_queue_size", "write_drain_threshold"):
        options[key] = sys_int(key)
    epoch_period = int(cfg.get("other", "epoch_period"))
    for section, key in (("other", "output_level"), ("other", "output_prefix"), ("timing", "ideal_memory_latency")):
        cfg.get(section, key)
    for key in ("num_links", "link_width", "link_speed", "block_size", "xbar_queue_depth"):
        cfg.get("hmc", key)
    for key, value in (("bankgroups", bankgroups), ("banks_per_group", banks_per_group), ("rows", rows),
                       ("columns", columns), ("BL", bl), ("channels", channels), ("ranks", ranks)):  # fmt: skip
        _log2("dram_structure", key, value)
    request_size = bus_width // 8 * bl
    _log2("system", "bus_width/8*BL (request size)", request_size)
    if math.log2(columns) < math.log2(bl):
        raise MemsimError(f"config {name}: columns ({columns}) smaller than BL ({bl})")
    for key in ("cmd_queue_size", "trans_queue_size", "epoch_period"):
        value = epoch_period if key == "epoch_period" else options[key]
        if value < 1:
            raise MemsimError(f"config {name}: {key} = {value}; give a positive number")
    if timing["tCK"] <= 0:
        raise MemsimError(f"config {name}: [timing] tCK = {timing['tCK']}; give the clock period in ns (> 0)")

    cfg.check_names()
    cfg.default_notices(KeyContext(family, protocol, bankgroups, refresh_policy, options["enable_self_refresh"],
                                   options["enable_power_down"], timing["RAAIMT"] > 0))  # fmt: skip
    report(cfg.notices, strict, source or name)
    return DramSpec(
        name=name, protocol=protocol, family=family, channels=channels, ranks=ranks, bankgroups=bankgroups,
        banks_per_group=banks_per_group, rows=rows, columns=columns, device_width=device_width, BL=bl,
        burst_cycle=burst_cycle, bus_width=bus_width, devices_per_rank=devices_per_rank, channel_size_mb=channel_size,
        request_size_bytes=request_size, pseudo_channels=pseudo_channels, timing=timing, power=power,
        address_mapping=mapping, queue_structure=queue_structure, row_buf_policy=row_policy,
        refresh_policy=refresh_policy, scheduler=scheduler, epoch_period=epoch_period,
        dual_command_issue=family == "HBM" and bool(cfg.get("dram_structure", "hbm_dual_cmd")),
        mode=mode or config_mode, write_buf_size=write_buf_size if write_buf_given else 0,
        notices=tuple(cfg.notices), **options,
    )  # fmt: skip


def load_spec(source: "str | Path | Mapping[str, Any] | DramSpec", mode: str | None = None,
              strict: bool = False) -> DramSpec:  # fmt: skip
    """A spec from a DRAMSim3 .ini path, a preset name (`zaya memsim configs`), or a sections mapping.

    `mode` ("dramsim3" or "jedec") overrides the config's; a `.ini` file runs in "dramsim3" mode unless told
    otherwise, presets and mappings in "jedec" mode. `strict` turns config problems into errors.
    """
    if isinstance(source, DramSpec):
        return source if mode is None or mode == source.mode else dataclasses.replace(source, mode=mode)
    if isinstance(source, Mapping):
        return spec_from_sections(source, name=str(source.get("name", "memsim")), mode=mode, strict=strict)
    path = Path(source)
    if path.suffix == ".ini" or path.is_file():
        doc = read_ini(path)
        lines = {(e.section, e.name): e.line for e in reversed(doc.entries)}
        skipped = tuple(ConfigNotice(PROBLEM, path.name, "", "", f"{text.strip()!r} is {why}; DRAMSim3 skips it",
                                     line) for line, text, why in doc.skipped)  # fmt: skip
        return spec_from_sections(doc.sections(), name=path.stem, mode=mode, strict=strict, lines=lines,
                                  default_mode="dramsim3", source=path.name, extra_notices=skipped)  # fmt: skip
    from memsim.presets import preset_sections

    return spec_from_sections(preset_sections(str(source)), name=str(source), mode=mode, strict=strict)
