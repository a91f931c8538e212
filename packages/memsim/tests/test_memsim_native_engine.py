"""memsim's native (C++) engine issues the same commands at the same cycles, and completes every request at
the same cycle, as the Python engine, on the same request streams, for every shipped part."""

import dataclasses
import random
import shutil

import pytest
from memsim.memory_system import MemorySystem
from memsim.presets import preset_names
from memsim.spec import load_spec

# controller settings no shipped part uses, on a DDR4 part: every branch of the scheduler and refresh
VARIANTS = {
    "per_rank_fcfs_close_page": {"queue_structure": "PER_RANK", "scheduler": "fcfs", "row_buf_policy": "CLOSE_PAGE"},
    "per_rank_frfcfs": {"queue_structure": "PER_RANK"},
    "unified_simultaneous_refresh": {"unified_queue": True, "refresh_policy": "RANK_LEVEL_SIMULTANEOUS"},
    "per_bank_refresh_fcfs": {"refresh_policy": "BANK_LEVEL_STAGGERED", "scheduler": "fcfs"},
    "dual_issue_close_page": {"dual_command_issue": True, "row_buf_policy": "CLOSE_PAGE"},
}

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="no C++ compiler: apt-get install -y g++")


@pytest.fixture(scope="module")
def native_dir(tmp_path_factory):
    """One build of the native library for the session's workers."""
    from memsim.cosim.native_build import build_library

    folder = tmp_path_factory.getbasetemp().parent / "memsim-native"
    build_library("native", folder)
    return folder


def _requests(seed: int, system: MemorySystem, n: int) -> list[tuple[int, int, bool]]:
    """(arrival cycle, address, is_write): streams, random lines, hot lines (merges and forwarding), bursts
    of arrivals that fill the queues, and idle gaps that let refresh and power-down logic run."""
    rng = random.Random(seed)
    line, top = system.line_bytes, 1 << system.mapping.address_bits
    hot = [rng.randrange(top // line) * line for _ in range(8)]
    out, cycle, stream = [], 0, rng.randrange(top // line) * line
    for _ in range(n):
        pick = rng.random()
        if pick < 0.4:
            stream = (stream + line) % top
            addr = stream
        elif pick < 0.6:
            addr = rng.choice(hot)
        else:
            addr = rng.randrange(top // line) * line
        cycle += rng.choice([0, 0, 0, 1, 2, 5, 20]) if rng.random() > 0.01 else rng.randint(2000, 20000)
        out.append((cycle, addr, rng.random() < 0.35))
    return out


def _drive(engine, requests, add) -> None:
    for i, (cycle, addr, write) in enumerate(requests):
        engine.run_until(max(cycle, engine.clk))
        while not engine.will_accept(addr, write):
            engine.run_until(engine.clk + 1)
        add(i, addr, write)
    engine.run_until(engine.clk + 2_000_000)  # long enough for the slowest request (fcfs behind per-bank refresh)


def _spec(config: str):
    if config in VARIANTS:
        return dataclasses.replace(load_spec("ddr4_8gb_x8_3200"), name=config, **VARIANTS[config])
    return load_spec(config)


@pytest.mark.parametrize("config", [*preset_names(), *VARIANTS])
def test_native_engine_matches_the_python_engine(native_dir, config: str) -> None:
    from memsim.cosim.native_engine import NativeEngine

    spec = _spec(config)
    system = MemorySystem(spec, functional=False)
    requests = _requests(sum(map(ord, config)), system, 3000)
    python_done = {}

    def add_python(i, addr, write):
        python_done[i] = system.add_transaction(addr, write, tag=i)

    class PythonSide:  # MemorySystem's clock under the name the driver uses
        clk = property(lambda self: system.clk)
        will_accept = staticmethod(system.will_accept)
        run_until = staticmethod(system.run_until)

    _drive(PythonSide(), requests, add_python)
    native = NativeEngine(spec, build_dir=native_dir, log_commands=True)
    _drive(native, requests, lambda i, addr, write: native.add_transaction(addr, write, i))
    native_done = dict(native.completions())
    assert native.clk == system.clk
    python_cycles = {i: t.complete_cycle for i, t in python_done.items() if t.complete_cycle >= 0}
    assert native_done == python_cycles
    assert len(native_done) == len(requests)  # every request completed
    commands = system.issued_commands()
    assert len(commands) > len(requests) // 2
    assert native.issued_commands() == [(*tuple(int(x) for x in c[:7]), bool(c[7])) for c in commands]
