"""Configs are read as DRAMSim3 reads them (inih's rules, DRAMSim3's defaults), and never silently."""

import warnings
from pathlib import Path

import pytest
from memsim import MemorySystem, MemsimError, load_spec
from memsim.config_reader import strtod, strtol
from memsim.config_report import MemsimConfigWarning
from memsim.ini_file import format_ini, parse_ini_text
from memsim.presets import preset_sections


def _load(path: Path | str, **kw):
    """(spec, warning messages) of one load."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        spec = load_spec(path, **kw)
    return spec, [str(w.message) for w in caught if issubclass(w.category, MemsimConfigWarning)]


def _ini(tmp_path: Path, text: str, name: str = "part.ini") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def _ddr4_ini(**changes: dict[str, object]) -> str:
    """The DDR4 preset written as an .ini file, with some sections' keys changed (None deletes a key)."""
    sections = preset_sections("ddr4_8gb_x8_3200")
    return format_ini({name: {**values, **changes.get(name, {})} for name, values in sections.items()
                       if isinstance(values, dict)})  # fmt: skip


def test_every_shipped_config_loads(shipped_dir: Path) -> None:
    """All 86 files of DRAMSim3's configs/ load (HMC is refused, saying it is not modelled)."""
    loaded, refused = [], []
    for path in sorted((shipped_dir / "configs").glob("*.ini")):
        try:
            spec, _ = _load(path)
        except MemsimError as err:
            assert "HMC" in str(err) and "not modelled" in str(err), (path.name, err)
            refused.append(path.name)
            continue
        assert spec.mode == "dramsim3" and spec.channels >= 1
        loaded.append(path.name)
    assert len(loaded) + len(refused) == 86
    assert sorted(refused) == [
        "HMC2_8GB_4Lx16.ini",
        "HMC_2GB_4Lx16.ini",
        "HMC_2GB_4Lx16_dummy.ini",
        "HMC_4GB_4Lx16.ini",
    ]


def test_defaults_are_reported_once_by_file_section_and_key(shipped_dir: Path) -> None:
    spec, messages = _load(shipped_dir / "configs" / "DDR3_4Gb_x8_1600.ini")
    assert spec.t("tREFI") == 7800  # the file spells it REFI, which DRAMSim3 does not read
    assert messages.count("DDR3_4Gb_x8_1600.ini: [timing] not set, DRAMSim3's defaults used: tREFI = 7800") == 1
    assert ("DDR3_4Gb_x8_1600.ini:21: [timing] REFI is not a key DRAMSim3 reads (did you mean tREFI?): ignored; "
            "DRAMSim3 then uses tREFI's default 7800") in messages  # fmt: skip
    assert sum("tREFI" in m for m in messages) == 2
    # the keys DRAMSim3 reads but a one-bank-group DDR3 part does not use are not reported as defaults
    assert not any("tRRD_L =" in m or "tRCDRD" in m for m in messages)


def test_empty_values_and_inline_comments(shipped_dir: Path) -> None:
    hbm, messages = _load(shipped_dir / "configs" / "HBM_4Gb_x128.ini")
    assert hbm.t("tRFC") == 74  # `tRFC =` is empty: DRAMSim3's default
    assert "HBM_4Gb_x128.ini: [timing] empty, DRAMSim3's defaults used: tRFC = 74" in messages
    stt, messages = _load(shipped_dir / "configs" / "ST-1.2x.ini")
    assert stt.protocol == "DDR3"  # `protocol = DDR3  ; it's STT-MRAM, ...`
    assert stt.t("tRCD") == 10 and stt.tCK_ns == 1.25  # it gives tRCDRD, which DDR3 does not read
    assert any("[timing] set but not used (DDR and LPDDR use tRCD): tRCDRD, tRCDWR" in m for m in messages)


def test_strict_refuses_problems_but_not_what_is_known(shipped_dir: Path) -> None:
    load_spec(shipped_dir / "configs" / "DDR4_8Gb_x8_3200.ini", strict=True)  # tRFC2, IPP0 ...: not modelled, fine
    with pytest.raises(MemsimError, match=r"DDR3_4Gb_x8_1600\.ini:21: \[timing\] REFI is not a key DRAMSim3 reads"):
        load_spec(shipped_dir / "configs" / "DDR3_4Gb_x8_1600.ini", strict=True)


def test_inih_rules() -> None:
    doc = parse_ini_text(
        "\ufeff[Timing]\nCL: 22\ntRP = 10  ; comment\ntRAS = 30;not a comment\n  ; indented comment\n"
        "tFAW = 20\n  40\n[ system ]\nchannels = 2\nchannels = 4\nno separator here\n[broken\n# done\n"
    )
    sections = doc.sections()
    assert sections["Timing"] == {"CL": "22", "tRP": "10", "tRAS": "30;not a comment", "tFAW": "20\n40"}
    assert sections[" system "] == {"channels": "2\n4"}
    assert [(line, why.split()[0]) for line, _, why in doc.skipped] == [(11, "neither"), (12, "a")]
    assert (strtol("0x10"), strtol("010"), strtol(" -7 cycles"), strtol("1.9"), strtol("x")) == (16, 8, -7, 1, None)
    assert (strtod("1.25;"), strtod(" 2e-1 ns"), strtod("fast")) == (1.25, 0.2, None)


def test_inih_rules_decide_the_spec(tmp_path: Path) -> None:
    text = _ddr4_ini(timing={"CL": None, "tRP": None}, system={"channels": None})
    text = text.replace("[timing]", "[TIMING]\ncl : 20\ntRP = 0x10 ; hex, as strtol reads it")
    text += "[ system ]\nchannels = 4\n  [other]\n"
    spec, messages = _load(_ini(tmp_path, text))
    assert (spec.t("CL"), spec.t("tRP"), spec.channels) == (20, 16, 1)  # `[ system ]` is not [system]
    assert any("part.ini: [ system ] is not a section DRAMSim3 reads, so its keys are ignored; did you mean [system]?"
               in m for m in messages)  # fmt: skip
    assert any("[system] not set, DRAMSim3's defaults used: channels = 1" in m for m in messages)


def test_misspelt_values_are_reported_and_strict_refuses_them(tmp_path: Path) -> None:
    path = _ini(tmp_path, _ddr4_ini(system={"row_buf_policy": "CLOSE_PAGEE", "unified_queue": "ture"},
                                    timing={"CL": "fast"}))  # fmt: skip
    spec, messages = _load(path)
    assert spec.row_buf_policy == "OPEN_PAGE" and not spec.unified_queue and spec.t("CL") == 12
    line = next(n for n, text in enumerate(path.read_text().splitlines(), 1) if "CLOSE_PAGEE" in text)
    assert (f"part.ini:{line}: [system] row_buf_policy = 'CLOSE_PAGEE' is not one of OPEN_PAGE, CLOSE_PAGE (did you "
            "mean CLOSE_PAGE?); DRAMSim3 reads it as OPEN_PAGE, and so does memsim") in messages  # fmt: skip
    assert any("[system] unified_queue = 'ture' is not true or false; DRAMSim3 ignores it and uses its default False"
               in m for m in messages)  # fmt: skip
    assert any("[timing] CL = 'fast' is not an integer; DRAMSim3 ignores it and uses its default 12" in m
               for m in messages)  # fmt: skip
    with pytest.raises(MemsimError, match=r"part\.ini has 3 problem\(s\) \(strict\): .*row_buf_policy = 'CLOSE_PAGEE'"):
        load_spec(path, strict=True)
    with pytest.raises(MemsimError, match="strict"):
        MemorySystem(path, strict=True)


def test_unknown_keys_name_what_is_allowed(tmp_path: Path) -> None:
    _, messages = _load(_ini(tmp_path, _ddr4_ini(system={"queue_size": 8, "wierd_option": 1})))
    assert any("[system] queue_size is not a key DRAMSim3 reads (did you mean cmd_queue_size?): ignored" in m
               for m in messages)  # fmt: skip
    weird = next(m for m in messages if "wierd_option" in m)
    assert "keys of [system]: channel_size, channels, bus_width, address_mapping, queue_structure" in weird
    with pytest.raises(MemsimError, match="2 problem"):
        load_spec(tmp_path / "part.ini", strict=True)


def test_presets_and_hydra_configs_read_by_the_same_rules() -> None:
    sections = preset_sections("ddr4_8gb_x8_3200")
    sections["system"]["row_buf_policy"] = "close_page"  # names are case-insensitive, values are not (DRAMSim3)
    sections["timing"]["trcd"] = sections["timing"].pop("tRCD")
    with pytest.warns(MemsimConfigWarning, match="'close_page' is not one of OPEN_PAGE, CLOSE_PAGE"):
        spec = load_spec(sections)
    assert spec.row_buf_policy == "OPEN_PAGE" and spec.t("tRCD") == 22 and spec.mode == "jedec"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        load_spec("ddr4_8gb_x8_3200")  # shipped presets read without a single notice


def test_a_preset_written_as_ini_reads_back_the_same(tmp_path: Path) -> None:
    for preset in ("ddr4_8gb_x8_3200", "hbm3_16gb_pc"):
        spec, messages = _load(_ini(tmp_path, format_ini(preset_sections(preset)), f"{preset}.ini"), mode="jedec")
        same = load_spec(preset)
        assert messages == [] and (spec.timing, spec.power, spec.channels) == (same.timing, same.power, same.channels)
