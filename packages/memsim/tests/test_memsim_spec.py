"""Standards as data: DRAMSim3 .ini files and Hydra presets load to the same spec; bad input fails clearly."""

import re

import pytest
from memsim import MemorySystem, MemsimError, load_spec, parse_trace_text
from memsim.address_mapping import DramAddress, build_address_mapping
from memsim.ini_file import parse_ini_text
from memsim.presets import preset_names, preset_sections
from memsim.spec import spec_from_sections
from memsim.timing_table import build_constraints
from zaya_config import ZayaConfigError, compose, validate_config

PAIRS = {"DDR4_8Gb_x8_3200": "ddr4_8gb_x8_3200", "GDDR6_8Gb_x16": "gddr6_8gb_x16", "HBM2_8Gb_x128": "hbm2_8gb_x128",
         "LPDDR4_8Gb_x16_2400": "lpddr4_8gb_x16_2400"}  # fmt: skip


@pytest.mark.parametrize(("ini", "preset"), list(PAIRS.items()))
def test_ini_and_preset_give_the_same_spec(reference_dir, ini: str, preset: str) -> None:
    a, b = load_spec(reference_dir / "configs" / f"{ini}.ini"), load_spec(preset)
    assert build_constraints(load_spec(a, mode="jedec")) == build_constraints(b)  # every timing rule
    assert (a.power, a.ranks, a.channels, a.columns, a.request_size_bytes, a.t("tREFI"), a.t("tRFC")) == (
        b.power, b.ranks, b.channels, b.columns, b.request_size_bytes, b.t("tREFI"), b.t("tRFC"))  # fmt: skip
    assert (a.mode, b.mode) == ("dramsim3", "jedec")  # a DRAMSim3 file runs as DRAMSim3 does


def test_dramsim3_derivations() -> None:
    ddr4, gddr6, hbm2 = load_spec("ddr4_8gb_x8_3200"), load_spec("gddr6_8gb_x16"), load_spec("hbm2_8gb_x128")
    assert (ddr4.ranks, ddr4.burst_cycle, ddr4.request_size_bytes, ddr4.t("read_delay")) == (2, 4, 64, 26)
    assert (gddr6.bankgroups, gddr6.banks_per_group, gddr6.burst_cycle, gddr6.request_size_bytes) == (1, 16, 1, 256)
    assert hbm2.dual_command_issue and hbm2.t("tRTP") == 5  # tRTP_L/S are not read, as in DRAMSim3
    assert load_spec("hbm3_16gb_pc").channels == 32  # 16 channels x 2 pseudo-channels


def test_inline_comments_and_numbers_like_inih() -> None:
    sections = parse_ini_text("[timing]\ntRPRE = 1; read preamble\n[x]\n; comment\n").sections()
    assert sections["timing"]["tRPRE"] == "1; read preamble"
    spec = spec_from_sections({**preset_sections("ddr4_8gb_x8_3200"), "timing": {
        **preset_sections("ddr4_8gb_x8_3200")["timing"], "tRPRE": "2; comment"}})  # fmt: skip
    assert spec.t("tRPRE") == 2


@pytest.mark.parametrize("preset", preset_names())
def test_mapping_round_trip(preset: str) -> None:
    spec = load_spec(preset)
    mapping = build_address_mapping(spec)
    where = DramAddress(spec.channels - 1, spec.ranks - 1, spec.bankgroups - 1, spec.banks_per_group - 1, 5, 3)
    assert mapping.decode(mapping.encode(where)) == where
    assert mapping.address_bits == spec.capacity_bytes.bit_length() - 1


def test_known_mapping_bits() -> None:
    m = build_address_mapping(load_spec("hbm2_8gb_x128"))  # rorabgbachco: co, ch, ba, bg, ra, ro from bit 6 up
    assert m.decode(0x40) == DramAddress(0, 0, 0, 0, 0, 1)
    assert m.decode(1 << 11) == DramAddress(1, 0, 0, 0, 0, 0)
    assert m.decode(1 << 14) == DramAddress(0, 0, 0, 1, 0, 0)


def _broken(section: str, key: str, value: object = None) -> dict:
    sections = {k: dict(v) if isinstance(v, dict) else v for k, v in preset_sections("ddr4_8gb_x8_3200").items()}
    if value is None:
        del sections[section][key]
    else:
        sections[section][key] = value
    return sections


@pytest.mark.parametrize(("section", "key", "value", "message"), [
    ("dram_structure", "protocol", "DDR9", "unknown protocol 'DDR9'; allowed: DDR3"),
    ("system", "address_mapping", "rorobabgchco", "must be 12 letters naming each of"),
    ("system", "queue_structure", "PER_CHANNEL", "queue_structure = 'PER_CHANNEL' is not allowed (did you mean PER_RANK?); allowed: PER_BANK"),
    ("system", "refresh_policy", "RANK_LEVEL", "refresh_policy = 'RANK_LEVEL' is not allowed"),
    ("dram_structure", "rows", 3000, "rows = 3000 must be a power of two"),
])  # fmt: skip
def test_bad_configs_name_the_problem(section: str, key: str, value: object, message: str) -> None:
    """What DRAMSim3 aborts on is an error here too (with or without strict)."""
    with pytest.raises(MemsimError, match=re.escape(message)):
        MemorySystem(spec_from_sections(_broken(section, key, value)))


def test_unknown_preset_lists_the_presets() -> None:
    with pytest.raises(MemsimError, match="presets: ddr4_8gb_x8_3200"):
        load_spec("nope")


def test_trace_errors_name_line_and_text() -> None:
    trace = parse_trace_text("0x40 READ 0\n0x80 WRITE 3\n")
    assert trace.is_write.tolist() == [False, True] and trace.cycles.tolist() == [0, 3]
    with pytest.raises(MemsimError, match=r"t\.trace:2: malformed trace line '0x80 FETCH 3'"):
        parse_trace_text("0x40 READ 0\n0x80 FETCH 3\n", source="t.trace")
    with pytest.raises(MemsimError, match=r":1: malformed trace line 'zz READ 1'"):
        parse_trace_text("zz READ 1\n")


def test_hydra_preset_composes_and_validates() -> None:
    cfg = compose("zaya", ["+memsim=hbm2_8gb_x128", "memsim.timing.CL=15"])
    spec = validate_config(cfg)["memsim"].build_spec()
    assert spec.t("CL") == 15 and spec.channels == 8
    with pytest.raises(ZayaConfigError, match=r"memsim\.hbm2_8gb_x128: .*row_buf_policy = 'CLOSED' is not one of"):
        validate_config(compose("zaya", ["+memsim=hbm2_8gb_x128", "+memsim.strict=true",
                                         "memsim.system.row_buf_policy=CLOSED"]))  # fmt: skip
