"""Standards beyond DRAMSim3, as Ramulator 2 models them: DDR5 same-bank refresh (REFsb) and refresh management
(RFM), LPDDR5 and HBM3 per-bank refresh; every timing value of their presets cites its source."""

import re
from importlib.resources import files

import pytest
from memsim import MemorySystem, MemsimError, TraceFrontend, load_spec
from memsim.checker import ProtocolChecker, check_commands
from memsim.commands import Cmd
from memsim.fuzz import random_trace
from memsim.presets import preset_sections
from memsim.spec import spec_from_sections

REFSB, RFM, REFB, ACT = Cmd.REFRESH_SAME_BANK, Cmd.RFM, Cmd.REFRESH_BANK, Cmd.ACTIVATE
CYCLES = 60_000


def _spec(preset: str, system: dict | None = None, **timing: object):
    sections = preset_sections(preset)
    sections["system"] = {**sections["system"], **(system or {})}
    sections["timing"] = {**sections["timing"], **timing}
    return spec_from_sections(sections, name=preset)


def _run(spec, n: int = 3000, **kw) -> MemorySystem:
    system = MemorySystem(spec, functional=False)
    TraceFrontend(system, random_trace(spec, n, seed=5, **kw)).run(CYCLES)
    return system


def test_ddr5_same_bank_refresh() -> None:
    spec = _spec("ddr5_16gb_x8_4800", {"refresh_policy": "SAME_BANK"})
    system = _run(spec, max_gap=8, locality=0.3)
    commands = [c for c in system.issued_commands() if c[1] == 0]
    refsb = [c for c in commands if c[2] == REFSB]
    assert [c[4] % spec.banks_per_group for c in refsb[:8]] == [0, 1, 2, 3, 0, 1, 2, 3]  # bank index by bank index
    assert len(refsb) == CYCLES // spec.t("tREFIb") and not any(c[2] == Cmd.REFRESH for c in commands)
    for cyc, _, _, _, bank, *_ in refsb:  # the refreshed index waits tRFCsb in every group; the others do not
        index = bank % spec.banks_per_group
        acts = [c for c in commands if c[2] == ACT and cyc <= c[0] < cyc + spec.t("tRFCb")]
        assert all(c[4] % spec.banks_per_group != index for c in acts)
    assert any(c[2] == ACT and any(r[0] < c[0] < r[0] + spec.t("tRFCb") for r in refsb) for c in commands)
    stats = system.stats()["0"]
    assert stats["num_refsb_cmds"] == len(refsb) and stats["refsb_energy"] > 0
    assert check_commands(spec, system.issued_commands(), CYCLES) == []


def test_ddr5_refresh_management() -> None:
    spec = _spec("ddr5_16gb_x8_4800", RAAIMT=8)
    system = _run(spec, max_gap=4, locality=0.05)
    commands = [c for c in system.issued_commands() if c[1] == 0]
    rfm = [c[0] for c in commands if c[2] == RFM]
    acts = [c for c in commands if c[2] == ACT]
    assert len(rfm) >= len(acts) // (8 * spec.banks)  # at least one RFM per RAAIMT activates of a bank
    counts = [0] * spec.banks
    for cyc, _, cmd, _, bank, *_ in commands:  # replay Ramulator 2's rule: no bank passes RAAIMT + what is queued
        if cmd == ACT:
            counts[bank] += 1
        elif cmd == RFM:
            assert max(counts) >= 8
            counts = [0] * spec.banks
            assert not any(c[2] == ACT and cyc <= c[0] < cyc + spec.t("tRFM") for c in acts)
    stats = system.stats()["0"]
    per_ref = stats["ref_energy"] / stats["num_ref_cmds"]  # tRFM = tRFC here: an RFM costs a REF's energy
    assert stats["num_rfm_cmds"] == len(rfm) and stats["rfm_energy"] == pytest.approx(len(rfm) * per_ref)
    assert check_commands(spec, system.issued_commands(), CYCLES) == []


@pytest.mark.parametrize(("preset", "to_refb", "to_act"), [("hbm3_16gb_pc", "tRREFD", "tRREFD"),
                                                            ("lpddr5_8gb_x16_6400", "tRREFD", "tPBR2ACT")])  # fmt: skip
def test_per_bank_refresh_of_hbm3_and_lpddr5(preset: str, to_refb: str, to_act: str) -> None:
    spec = load_spec(preset)
    assert spec.refresh_policy == "BANK_LEVEL_STAGGERED"
    system = _run(spec, n=2000, max_gap=6, locality=0.3)
    commands = system.issued_commands()
    assert sum(c[2] == REFB for c in commands) == spec.channels * (CYCLES // spec.t("tREFIb"))
    assert check_commands(spec, commands, CYCLES) == []
    # the checker holds the per-bank refresh rules: another bank's REFpb / ACT too early is reported
    checker = ProtocolChecker(spec)
    checker.check(1000, 0, REFB, 0, 0)
    checker.check(1000 + spec.t(to_refb) - 1, 0, REFB, 0, 1)
    checker.check(1000 + spec.t(to_refb) - 1 + spec.t(to_act) - 1, 0, ACT, 0, 2, 5)
    assert [v.rule for v in checker.violations] == ["per-bank refresh to per-bank refresh of another bank",
                                                    "per-bank refresh to ACT of another bank"]  # fmt: skip


def test_lpddr5_latencies() -> None:
    spec = load_spec("lpddr5_8gb_x16_6400")
    system = MemorySystem(spec)
    read = system.add_transaction(0x4000, False)
    system.drain()
    assert spec.burst_cycle == 2 and read.latency == 1 + spec.t("tRCD") + spec.t("CL") + spec.burst_cycle == 35


def test_new_features_use_the_python_engine() -> None:
    spec = _spec("ddr5_16gb_x8_4800", {"refresh_policy": "SAME_BANK"})
    with pytest.raises(MemsimError, match="does not model DDR5 same-bank refresh or refresh management"):
        TraceFrontend(MemorySystem(spec, functional=False), random_trace(spec, 10)).run(100, engine="compiled")


@pytest.mark.parametrize("preset", ["ddr5_16gb_x8_4800", "hbm3_16gb_pc", "lpddr5_8gb_x16_6400"])
def test_every_timing_value_cites_its_source(preset: str) -> None:
    text = (files("memsim.conf") / "memsim" / f"{preset}.yaml").read_text()
    timing = text[text.index("\ntiming:") + 1 : text.index("\npower:")].splitlines()[1:]
    sources = set(re.findall(r"^#\s+(\[[\w-]+\])", text, re.M))
    assert sources, "the header names its sources"
    for line in timing:
        key, _, comment = line.partition("#")
        assert comment.strip(), f"{preset}: {key.strip()} has no source"
        cited = re.findall(r"\[[\w-]+\]", comment)
        assert set(cited) <= sources, f"{preset}: {key.strip()} cites {cited}, not in the header"
        assert cited or re.search(r"JESD|tREFI /|RFM off|no additive latency", comment), f"{preset}: {line}"
