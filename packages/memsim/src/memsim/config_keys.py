"""Every config key memsim knows: DRAMSim3's keys with its defaults, memsim's own keys, and the keys found in
DRAMSim3's shipped configs that neither simulator models.

The defaults are DRAMSim3's (`Config::Init*Params` at commit 29817593), because a DRAMSim3 `.ini` file must
mean what it means to DRAMSim3: a key that is missing or has no readable value takes these values there.
`used` says when a key affects the simulation, so that only defaults that matter are reported.
"""

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple


class KeyContext(NamedTuple):
    """What decides whether a key matters for one part."""

    family: str
    protocol: str
    bankgroups: int
    refresh_policy: str
    self_refresh: bool
    power_down: bool
    rfm: bool = False


class Used(NamedTuple):
    """When a key affects the simulation, and why it does not otherwise."""

    test: Callable[[KeyContext], bool]
    why_not: str
    report_unused: bool = True  # False for keys of options that are off: a config may set them ahead


@dataclass(frozen=True)
class Key:
    """One config key: its type, DRAMSim3's default, the values allowed, and when it matters."""

    name: str
    kind: str  # "int", "float", "bool", "str" or "choice"
    default: Any
    doc: str
    used: Used | None = None  # None: an option (its default is not reported)
    choices: tuple[str, ...] = ()
    memsim_only: bool = False


ALWAYS = Used(lambda ctx: True, "")
_GROUPS = Used(lambda ctx: ctx.bankgroups > 1, "with one bank group the _S values apply, as in DRAMSim3")
_DDR_LIKE = Used(lambda ctx: ctx.family in ("DDR", "LPDDR"), "GDDR and HBM use tRCDRD and tRCDWR")
_GDDR_HBM = Used(lambda ctx: ctx.family in ("GDDR", "HBM"), "DDR and LPDDR use tRCD")
_BANK_REFRESH = Used(lambda ctx: ctx.refresh_policy in ("BANK_LEVEL_STAGGERED", "SAME_BANK"),
                     "refresh_policy is not BANK_LEVEL_STAGGERED or SAME_BANK", report_unused=False)  # fmt: skip
_SREF = Used(lambda ctx: ctx.self_refresh, "enable_self_refresh is off", report_unused=False)
_PD = Used(lambda ctx: ctx.power_down, "enable_power_down is off", report_unused=False)
_PPD = Used(
    lambda ctx: ctx.family == "GDDR" or ctx.protocol in PPD_PROTOCOLS, "only GDDR, LPDDR4/5, DDR5 and HBM3 have tPPD"
)
_RFM = Used(lambda ctx: ctx.rfm, "RAAIMT is 0 (RFM off)", report_unused=False)
_GDDR = Used(lambda ctx: ctx.family == "GDDR", "only GDDR has t32AW")

PPD_PROTOCOLS = ("LPDDR4", "LPDDR5", "DDR5", "HBM3")  # with the GDDRs: the standards with a PRE-to-PRE delay
QUEUE_STRUCTURES = ("PER_BANK", "PER_RANK")
ROW_BUF_POLICIES = ("OPEN_PAGE", "CLOSE_PAGE")
REFRESH_POLICIES = ("RANK_LEVEL_STAGGERED", "RANK_LEVEL_SIMULTANEOUS", "BANK_LEVEL_STAGGERED", "SAME_BANK")
SCHEDULERS = ("frfcfs", "fcfs")
MODES = ("dramsim3", "jedec")


def _keys(*keys: Key) -> dict[str, Key]:
    return {k.name: k for k in keys}


KEYS: dict[str, dict[str, Key]] = {
    "dram_structure": _keys(
        Key("protocol", "str", "DDR3", "DRAM standard (DDR3, DDR4, DDR5, LPDDR*, GDDR*, HBM*, HMC)", ALWAYS),
        Key("bankgroups", "int", 2, "bank groups per rank", ALWAYS),
        Key("banks_per_group", "int", 2, "banks per bank group", ALWAYS),
        Key("bankgroup_enable", "bool", True, "false: all banks in one group (GDDR5/6)"),
        Key("rows", "int", 1 << 16, "rows per bank", ALWAYS),
        Key("columns", "int", 1 << 10, "columns per row, in the protocol's unit", ALWAYS),
        Key("device_width", "int", 8, "data bits per device", ALWAYS),
        Key("BL", "int", 8, "burst length", ALWAYS),
        Key("num_dies", "int", 1, "dies per stack (DRAMSim3's thermal model only)"),
        Key("hbm_dual_cmd", "bool", True, "HBM: a row and a column command in one cycle"),
        Key(
            "pseudo_channels", "int", 1, "pseudo-channels per channel (HBM2/3); each is a controller", memsim_only=True
        ),
    ),
    "timing": _keys(
        Key("tCK", "float", 1.0, "clock period (ns)", ALWAYS),
        Key("AL", "int", 0, "additive latency", ALWAYS),
        Key("CL", "int", 12, "CAS (read) latency", ALWAYS),
        Key("CWL", "int", 12, "CAS write latency", ALWAYS),
        Key("tCCD_L", "int", 6, "column to column, same bank group", _GROUPS),
        Key("tCCD_S", "int", 4, "column to column, other bank group", ALWAYS),
        Key("tRTRS", "int", 2, "rank to rank switch", ALWAYS),
        Key("tRTP", "int", 5, "read to precharge", ALWAYS),
        Key("tWTR_L", "int", 5, "write to read, same bank group", _GROUPS),
        Key("tWTR_S", "int", 5, "write to read, other bank group", ALWAYS),
        Key("tWR", "int", 10, "write recovery", ALWAYS),
        Key("tRP", "int", 10, "precharge period", ALWAYS),
        Key("tRRD_L", "int", 4, "activate to activate, same bank group", _GROUPS),
        Key("tRRD_S", "int", 4, "activate to activate, other bank group", ALWAYS),
        Key("tRAS", "int", 24, "activate to precharge", ALWAYS),
        Key("tRCD", "int", 10, "activate to column command", _DDR_LIKE),
        Key("tRFC", "int", 74, "all-bank refresh cycle", ALWAYS),
        Key("tCKE", "int", 6, "minimum time in power-down", _PD),
        Key("tCKESR", "int", 12, "minimum time in self-refresh", _SREF),
        Key("tXS", "int", 432, "self-refresh exit to a valid command", _SREF),
        Key("tXP", "int", 8, "power-down exit to a valid command", _PD),
        Key("tRFCb", "int", 20, "per-bank (or same-bank) refresh cycle", _BANK_REFRESH),
        Key("tREFI", "int", 7800, "refresh interval", ALWAYS),
        Key("tREFIb", "int", 1950, "per-bank refresh interval", _BANK_REFRESH),
        Key("tFAW", "int", 50, "four-activate window", ALWAYS),
        Key("tRPRE", "int", 1, "read preamble (read by DRAMSim3, not used in its timing)"),
        Key("tWPRE", "int", 1, "write preamble (read by DRAMSim3, not used in its timing)"),
        Key("tPPD", "int", 0, "precharge to precharge (GDDR, LPDDR4)", _PPD),
        Key("t32AW", "int", 330, "32-activate window (GDDR)", _GDDR),
        Key("tRCDRD", "int", 24, "activate to read (GDDR, HBM)", _GDDR_HBM),
        Key("tRCDWR", "int", 20, "activate to write (GDDR, HBM)", _GDDR_HBM),
        Key("ideal_memory_latency", "int", 10, "latency of DRAMSim3's ideal memory (not simulated)"),
        Key("tCCD_L_WR", "int", 0, "write to write, same bank group (DDR5, LPDDR5; 0: tCCD_L)", memsim_only=True),
        Key(
            "tRREFD",
            "int",
            0,
            "per-bank refresh to per-bank refresh of another bank (HBM3 tRREFD, LPDDR5 "
            "tpbR2pbR; 0: tRRD_S), jedec mode",
            memsim_only=True,
        ),
        Key(
            "tPBR2ACT",
            "int",
            0,
            "per-bank refresh to activate of another bank (LPDDR5 tpbR2act; 0: tRREFD, else tRRD_S), jedec mode",
            memsim_only=True,
        ),
        Key(
            "RAAIMT",
            "int",
            0,
            "DDR5 refresh management: activates of a bank that trigger an RFM (0: RFM off)",
            memsim_only=True,
        ),
        Key("tRFM", "int", 0, "DDR5 RFM (all-bank) cycle (0: tRFC, as Ramulator 2)", _RFM, memsim_only=True),
    ),
    "power": _keys(
        Key("VDD", "float", 1.2, "supply voltage (V)", ALWAYS),
        Key("IDD0", "float", 48, "activate-precharge current (mA)", ALWAYS),
        Key("IDD2P", "float", 25, "precharge power-down current", _PD),
        Key("IDD2N", "float", 34, "precharge standby current", ALWAYS),
        Key("IDD3N", "float", 43, "active standby current", ALWAYS),
        Key("IDD4W", "float", 123, "write burst current", ALWAYS),
        Key("IDD4R", "float", 135, "read burst current", ALWAYS),
        Key("IDD5AB", "float", 250, "all-bank refresh current", ALWAYS),
        Key("IDD5PB", "float", 5, "per-bank refresh current", _BANK_REFRESH),
        Key("IDD6x", "float", 31, "self-refresh current", _SREF),
    ),
    "system": _keys(
        Key("channel_size", "int", 1024, "MB per channel (sets the number of ranks)", ALWAYS),
        Key("channels", "int", 1, "independent channels", ALWAYS),
        Key("bus_width", "int", 64, "data bus bits per channel", ALWAYS),
        Key("address_mapping", "str", "chrobabgraco", "address bit order, most significant field first", ALWAYS),
        Key("queue_structure", "choice", "PER_BANK", "command queue per bank or per rank", choices=QUEUE_STRUCTURES),
        Key(
            "row_buf_policy",
            "choice",
            "OPEN_PAGE",
            "leave rows open or close them with each column command",
            choices=ROW_BUF_POLICIES,
        ),
        Key("cmd_queue_size", "int", 16, "entries per command queue"),
        Key("trans_queue_size", "int", 32, "entries of the read queue, the write buffer, or the unified queue"),
        Key("unified_queue", "bool", False, "one transaction queue for reads and writes"),
        Key(
            "write_buf_size",
            "int",
            16,
            "write buffer entries (jedec mode; DRAMSim3 reads it but sizes the write buffer by trans_queue_size)",
        ),
        Key(
            "refresh_policy",
            "choice",
            "RANK_LEVEL_STAGGERED",
            "how refreshes are spread over ranks and banks",
            choices=REFRESH_POLICIES,
        ),
        Key("enable_self_refresh", "bool", False, "put idle ranks into self-refresh"),
        Key("sref_threshold", "int", 1000, "idle cycles before a rank enters self-refresh"),
        Key(
            "aggressive_precharging_enabled",
            "bool",
            False,
            "jedec mode: close a row once no queued command hits it (DRAMSim3 reads it but never acts on it)",
        ),
        Key("scheduler", "choice", "frfcfs", "command scheduler", choices=SCHEDULERS, memsim_only=True),
        Key(
            "write_drain_threshold",
            "int",
            8,
            "buffered writes above which an idle controller drains them",
            memsim_only=True,
        ),
        Key(
            "mode",
            "choice",
            "",
            "dramsim3: reproduce DRAMSim3; jedec: JEDEC behaviour where they differ",
            choices=MODES,
            memsim_only=True,
        ),
        Key(
            "enable_power_down", "bool", False, "put idle precharged ranks into precharge power-down", memsim_only=True
        ),
        Key("pd_threshold", "int", 20, "idle cycles before a precharged rank powers down", memsim_only=True),
    ),
    "other": _keys(
        Key("epoch_period", "int", 100000, "cycles per epoch of the epoch stats"),
        Key("output_level", "int", 1, "DRAMSim3's output files (memsim writes stats.json and epochs.json)"),
        Key("output_prefix", "str", "dramsim3", "DRAMSim3's output file prefix (memsim names its own files)"),
    ),
    "hmc": _keys(
        Key("num_links", "int", 4, "HMC links"),
        Key("link_width", "int", 16, "HMC link lanes"),
        Key("link_speed", "int", 15000, "HMC link speed (MHz)"),
        Key("block_size", "int", 64, "HMC request size (bytes)"),
        Key("xbar_queue_depth", "int", 16, "HMC crossbar queue depth"),
    ),
}

# Keys that appear in DRAMSim3's shipped configs for parameters neither DRAMSim3 nor memsim models; they are
# accepted and reported as ignored (never an error, not even with strict).
# fmt: off
NOT_MODELLED: dict[str, dict[str, str]] = {
    "timing": {
        "tRFC2": "2x fine-granularity refresh", "tRFC4": "4x fine-granularity refresh",
        "tWR2": "write recovery of the 2x mode", "tRTP_L": "HBM read to precharge, same group",
        "tRTP_S": "HBM read to precharge, other group", "tCKSRE": "clock hold after self-refresh entry",
        "tRFCPB": "HBM per-bank refresh cycle; memsim reads tRFCb", "tCMD": "command clocks",
    },
    "power": {
        "IDD1": "activate-read-precharge current", "IDD2Q": "precharge quiet standby", "IDD3P": "active power-down",
        "IDD3Pf": "active power-down, fast exit", "IDD3Ps": "active power-down, slow exit", "IDD5": "burst refresh",
        "IDD6": "self-refresh current; memsim reads IDD6x", "IDD6L": "low-temperature self-refresh",
        "IDD7": "bank interleave read", "IPP0": "VPP activate current",
    },
    "other": {"validation_output": "DRAMSim2's validation log"},
}
# fmt: on
# Whole sections that configs carry for DRAMSim3's thermal model, which memsim does not have.
NOT_MODELLED_SECTIONS = {"thermal": "DRAMSim3's thermal model (built only with -DTHERMAL)"}

# Spellings from older simulators found in DRAMSim3's shipped configs: DRAMSim3 does not read them (so it uses
# the default of the key named here), and neither does memsim; they are reported as unknown with the hint.
SUGGESTIONS: dict[str, str] = {"refi": "tREFI", "refresh_period": "tREFI", "tcas": "CL", "tcwd": "CWL",
                               "activation_window_depth": "tFAW"}  # fmt: skip


_BY_LOWER = {(section, name.lower()): key for section, keys in KEYS.items() for name, key in keys.items()}


def find_key(section: str, name: str) -> Key | None:
    """The key `name` of `section`, matched without regard to case (as DRAMSim3's reader does)."""
    return _BY_LOWER.get((section.lower(), name.lower()))
