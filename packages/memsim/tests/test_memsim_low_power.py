"""Self-refresh and precharge power-down as JEDEC defines them: entry when idle, exit on demand, their timing
(tCKESR, tXS, tCKE, tXP) in the controller and in the checker, their commands and energy in the stats."""

import pytest
from memsim import MemorySystem, MemsimError, TraceFrontend, load_spec
from memsim.checker import ProtocolChecker, check_commands
from memsim.commands import Cmd
from memsim.fuzz import random_trace
from memsim.power import EnergyModel
from memsim.presets import preset_sections
from memsim.spec import spec_from_sections

SRE, SRX, PDE, PDX, REF = Cmd.SREF_ENTER, Cmd.SREF_EXIT, Cmd.PD_ENTER, Cmd.PD_EXIT, Cmd.REFRESH


def _spec(preset: str = "ddr4_8gb_x8_3200", mode: str = "jedec", **system: object):
    sections = preset_sections(preset)
    sections["system"] = {**sections["system"], **system}
    return spec_from_sections(sections, name=preset, mode=mode)


def _read(system: MemorySystem, addr: int):
    trans = system.add_transaction(addr, False)
    system.drain()
    return trans


def _commands(system: MemorySystem, rank: int) -> list[tuple[int, int]]:
    return [(c[0], c[2]) for c in system.issued_commands() if c[3] == rank]


@pytest.mark.parametrize("mode", ["jedec", "dramsim3"])
def test_self_refresh_enters_when_idle_exits_on_demand_and_re_enters(mode: str) -> None:
    spec = _spec(mode=mode, enable_self_refresh=True, sref_threshold=500)
    system = MemorySystem(spec, functional=False)
    first = _read(system, 0x40)
    system.advance(50_000)
    sre = [cyc for cyc, cmd in _commands(system, 0) if cmd == SRE]
    assert len(sre) == 1  # the read's row closed, then SRE after 500 idle cycles
    assert sre[0] >= first.complete_cycle + 500 - spec.t("read_delay")
    late = _read(system, 0x80)
    cmds = _commands(system, 0)
    srx = next(cyc for cyc, cmd in cmds if cmd == SRX)
    act = next(cyc for cyc, cmd in cmds if cmd == Cmd.ACTIVATE and cyc > srx)
    assert act - srx == spec.t("tXS")  # the request waits for the exit
    assert late.latency == first.latency + spec.t("tXS")  # SRX, then tXS, then the usual closed-row read
    system.advance(50_000)
    assert sum(cmd == SRE for _, cmd in _commands(system, 0)) == 2  # re-entered (DRAMSim3 never does)
    assert not any(cmd == REF and sre[0] < cyc < srx for cyc, cmd in _commands(system, 0))  # it refreshes itself
    stats = system.stats()["0"]
    energy = EnergyModel.from_spec(spec)
    assert (stats["num_srefe_cmds"], stats["num_srefx_cmds"]) == (3, 1)  # rank 1, idle all along, entered once
    assert (500, SRE) in _commands(system, 1)
    assert (
        stats["sref_cycles"]["0"] > 80_000
        and stats["sref_energy"]["0"] == stats["sref_cycles"]["0"] * energy.self_refresh
    )
    background = sum(stats[k][r] for k in ("act_stb_energy", "pre_stb_energy", "sref_energy") for r in ("0", "1"))
    commands = sum(stats[k] for k in ("act_energy", "read_energy", "write_energy", "ref_energy", "refb_energy"))
    assert stats["total_energy"] == pytest.approx(background + commands)
    assert check_commands(spec, system.issued_commands(), system.clk) == []


def test_power_down_enters_exits_and_wakes_for_refresh() -> None:
    spec = _spec(enable_power_down=True, pd_threshold=30)
    system = MemorySystem(spec, functional=False)
    first = _read(system, 0x40)
    system.advance(3 * spec.t("tREFI"))
    cmds = _commands(system, 0)
    pde = [cyc for cyc, cmd in cmds if cmd == PDE]
    assert pde and pde[0] >= first.complete_cycle + 30 - spec.t("read_delay")
    refs = [cyc for cyc, cmd in cmds if cmd == REF]
    assert refs and all((cyc - spec.t("tXP"), PDX) in cmds for cyc in refs)  # each due REF wakes the rank first
    late = _read(system, 0x80)
    assert late.latency == first.latency + spec.t("tXP")
    stats = system.stats()["0"]
    assert stats["num_pde_cmds"] >= 3 and stats["num_pdx_cmds"] >= 3
    assert stats["pd_cycles"]["0"] > spec.t("tREFI")
    assert stats["pre_pd_energy"]["0"] == stats["pd_cycles"]["0"] * EnergyModel.from_spec(spec).pre_powerdown
    assert "num_pde_cmds" not in MemorySystem("ddr4_8gb_x8_3200").stats()["0"]  # DRAMSim3's stat names otherwise
    assert check_commands(spec, system.issued_commands(), system.clk) == []


@pytest.mark.parametrize("preset", ["ddr4_8gb_x8_3200", "lpddr4_8gb_x16_2400", "hbm2_8gb_x128"])
def test_low_power_under_traffic_is_clean_and_saves_energy(preset: str) -> None:
    cycles = 60_000
    trace = random_trace(load_spec(preset), 600, seed=9, max_gap=150, locality=0.3)
    energy, reads = {}, {}
    for low in (False, True):
        spec = _spec(preset, enable_self_refresh=low, sref_threshold=1500, enable_power_down=low, pd_threshold=40)
        runs = []
        for skip in (True, False) if low else (True,):  # event-driven equals ticking every cycle
            system = MemorySystem(spec, functional=False)
            for ctrl in system.channels:
                ctrl.skip_idle = skip
            TraceFrontend(system, trace).run(cycles)
            runs.append((system.issued_commands(), system.stats(cycles)))
        assert runs[0] == runs[-1]
        commands, stats = runs[0]
        assert check_commands(spec, commands, cycles) == []
        energy[low] = sum(s["total_energy"] for s in stats.values())
        reads[low] = sum(s["num_reads_done"] for s in stats.values())
        if low:
            assert sum(s["num_pde_cmds"] for s in stats.values()) > 10
    assert energy[True] < energy[False] and reads[True] == reads[False]  # the same work, done for less energy


def test_the_checker_enforces_the_low_power_rules() -> None:
    spec = load_spec("ddr4_8gb_x8_3200")
    t = spec.t

    def rules(stream: list[tuple[int, int, int]]) -> set[str]:
        checker = ProtocolChecker(spec)
        for cyc, cmd, bank in stream:
            checker.check(cyc, 0, cmd, bank // spec.banks, bank, 1)
        return {v.rule for v in checker.violations}

    act, rd, pre = Cmd.ACTIVATE, Cmd.READ, Cmd.PRECHARGE
    assert rules([(100, SRE, 0), (100 + t("tCKESR"), SRX, 0), (100 + t("tCKESR") + t("tXS"), act, 0)]) == set()
    assert "tCKESR" in rules([(100, SRE, 0), (100 + t("tCKESR") - 1, SRX, 0)])
    assert "tXS" in rules([(100, SRE, 0), (200, SRX, 0), (200 + t("tXS") - 1, act, 0)])
    assert "tCKE" in rules([(100, PDE, 0), (100 + t("tCKE") - 1, PDX, 0)])
    assert "tXP" in rules([(100, PDE, 0), (200, PDX, 0), (200 + t("tXP") - 1, act, 0)])
    assert "command to a rank in self-refresh" in rules([(100, SRE, 0), (2000, act, 0)])
    assert "command to a rank in power-down" in rules([(100, PDE, 0), (2000, REF, 0)])
    assert "SREFE with a bank open" in rules([(0, act, 0), (500, SRE, 0)])
    assert "tRDPDEN" in rules([(0, act, 0), (100, rd, 0), (112, pre, 0), (113, PDE, 0)])
    assert "exit from self-refresh" in rules([(100, SRX, 0)])


def test_the_compiled_engine_leaves_low_power_runs_to_the_python_engine() -> None:
    spec = _spec(enable_power_down=True)
    trace = random_trace(spec, 200, seed=1, max_gap=100)
    with pytest.raises(MemsimError, match="does not model self-refresh or power-down"):
        TraceFrontend(MemorySystem(spec, functional=False), trace).run(30_000, engine="compiled")
    auto, python = MemorySystem(spec, functional=False), MemorySystem(spec, functional=False)
    TraceFrontend(auto, trace).run(30_000)
    TraceFrontend(python, trace).run(30_000, engine="python")
    assert auto.issued_commands() == python.issued_commands()
