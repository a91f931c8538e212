"""The protocol checker: silent on everything the controller issues (fuzzing), loud on broken streams."""

import pytest
from memsim import MemorySystem, TraceFrontend, load_spec
from memsim.checker import ProtocolChecker, check_commands
from memsim.commands import Cmd
from memsim.fuzz import random_trace
from memsim.presets import preset_names, preset_sections
from memsim.spec import spec_from_sections

VARIANTS = {
    "close_page": {"row_buf_policy": "CLOSE_PAGE"},
    "per_rank_queues": {"queue_structure": "PER_RANK"},
    "fcfs": {"scheduler": "fcfs"},
    "bank_refresh": {"refresh_policy": "BANK_LEVEL_STAGGERED"},
    "simultaneous_refresh": {"refresh_policy": "RANK_LEVEL_SIMULTANEOUS"},
}


def _run(spec, seed: int, n: int = 1500, cycles: int = 30_000, **kw) -> list:
    system = MemorySystem(spec, functional=False)
    TraceFrontend(system, random_trace(system.spec, n, seed=seed, **kw)).run(cycles)
    return system.issued_commands()


@pytest.mark.parametrize("name", preset_names())
@pytest.mark.parametrize("seed", [0, 1])
def test_fuzz_presets_zero_violations(name: str, seed: int) -> None:
    spec = load_spec(name)
    commands = _run(spec, seed, write_fraction=0.4, max_gap=3)
    assert len(commands) > 500
    assert check_commands(spec, commands, 30_000) == []


@pytest.mark.parametrize("variant", list(VARIANTS))
@pytest.mark.parametrize("name", ["ddr4_8gb_x8_3200", "lpddr4_8gb_x16_2400", "hbm2_8gb_x128"])
def test_fuzz_controller_variants_zero_violations(name: str, variant: str) -> None:
    sections = preset_sections(name)
    sections["system"] = {**sections["system"], **VARIANTS[variant]}
    spec = spec_from_sections(sections, name=f"{name}-{variant}")
    commands = _run(spec, 3)
    kinds = {c[2] for c in commands}
    if variant == "close_page":
        assert Cmd.READ_PRECHARGE in kinds and Cmd.READ not in kinds
    if variant == "bank_refresh":
        assert Cmd.REFRESH_BANK in kinds
    assert check_commands(spec, commands, 30_000) == []


def _mutated(commands: list, index: int, shift: int) -> list:
    out = list(commands)
    c = out[index]
    out[index] = (c[0] + shift, *c[1:])
    return sorted(out, key=lambda c: c[0])


def test_checker_catches_broken_streams() -> None:
    spec = load_spec("ddr4_8gb_x8_3200")
    commands = _run(spec, 5)
    assert check_commands(spec, commands, 30_000) == []
    # a column command moved before its ACT's tRCD
    j = next(j for j, c in enumerate(commands) if c[2] == Cmd.ACTIVATE)
    i = next(i for i in range(j + 1, len(commands)) if commands[i][2:5:2] == (Cmd.READ, commands[j][4]))
    shift = commands[j][0] + spec.t("tRCD") - 1 - commands[i][0]
    rules = {v.rule for v in check_commands(spec, _mutated(commands, i, shift), 30_000)}
    assert "tRCD" in rules
    # a REF issued without its refreshes: the rate rule fires
    no_refresh = [c for c in commands if c[2] != Cmd.REFRESH]
    assert any(v.rule == "refresh rate" for v in check_commands(spec, no_refresh, 200_000))


def test_checker_rules_one_by_one() -> None:
    spec = load_spec("ddr4_8gb_x8_3200")

    def rules(stream: list[tuple[int, int, int, int]]) -> set[str]:
        checker = ProtocolChecker(spec)
        for cyc, cmd, bank, row in stream:
            checker.check(cyc, 0, cmd, bank // spec.banks, bank, row)
        return {v.rule for v in checker.violations}

    act, rd, wr, pre, ref = Cmd.ACTIVATE, Cmd.READ, Cmd.WRITE, Cmd.PRECHARGE, Cmd.REFRESH
    assert rules([(0, act, 0, 1), (100, rd, 0, 1), (200, pre, 0, 1)]) == set()
    assert "ACT to an open bank" in rules([(0, act, 0, 1), (100, act, 0, 2)])
    assert "column command to a closed bank or another row" in rules([(0, act, 0, 1), (100, rd, 0, 2)])
    assert "tRAS" in rules([(0, act, 0, 1), (10, pre, 0, 1)])
    assert "tRRD_L" in rules([(0, act, 0, 1), (2, act, 1, 1)])
    five = [(i * 8, act, b, 1) for i, b in enumerate((0, 4, 8, 12, 1))]
    assert "tFAW (five ACTs in the window)" in rules(five)
    assert "tCCD_L" in rules([(0, act, 0, 1), (30, act, 1, 1), (100, rd, 0, 1), (104, rd, 1, 1)])
    assert "tWTR_L" in rules([(0, act, 0, 1), (100, wr, 0, 1), (130, rd, 0, 1)])
    assert "REF with a bank open" in rules([(0, act, 0, 1), (100, ref, 0, -1)])
    assert "command bus" in rules([(0, act, 0, 1), (0, act, 4, 1)])
    assert "data bus" in rules([(0, act, 0, 1), (0 + 50, act, 16, 1), (100, rd, 0, 1), (102, rd, 16, 1)])
