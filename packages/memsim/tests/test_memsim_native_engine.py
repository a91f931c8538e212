"""memsim's native (C++) engine issues the same commands at the same cycles, and completes every request at
the same cycle, as the Python engine, on the same request streams: every shipped part (jedec mode), controller
variants in both modes, DRAMSim3's own .ini files (dramsim3 mode); parts the native engine does not model are
refused by name."""

import dataclasses
import random
import shutil

import pytest
from memsim.errors import MemsimError
from memsim.fuzz import random_trace
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
    "jedec_write_buffer_12": {"write_buf_size": 12},
    # DRAMSim3's departures: the first rank's simultaneous refresh only, its per-bank refresh timing (a refresh
    # queue that grows for good), a write buffer of trans_queue_size whatever write_buf_size says, and aggressive
    # precharging accepted but not done
    "dramsim3_simultaneous_refresh": {"mode": "dramsim3", "refresh_policy": "RANK_LEVEL_SIMULTANEOUS"},
    "dramsim3_per_bank_refresh": {"mode": "dramsim3", "refresh_policy": "BANK_LEVEL_STAGGERED"},
    "dramsim3_write_buffer_aggressive": {"mode": "dramsim3", "write_buf_size": 12, "aggressive_precharging": True},
}
# DRAMSim3's shipped files, read in dramsim3 mode: DDR3 (REFI, defaulted tRRD_L/S), HBM (an empty tRFCb =),
# STT-MRAM (unified queue, per-rank queues)
SHIPPED_INI = ["DDR3_8Gb_x8_1600.ini", "HBM_4Gb_x128.ini", "ST-1.5x.ini"]
# what the native engine, like the compiled one, leaves to the Python engine (jedec mode unless said)
NOT_MODELLED = {
    "self-refresh or power-down": {"enable_self_refresh": True, "sref_threshold": 500},
    "self-refresh or power-down ": {"enable_power_down": True, "pd_threshold": 30},
    "aggressive precharging (jedec mode)": {"aggressive_precharging": True},
    "DDR5 same-bank refresh or refresh management": {"refresh_policy": "SAME_BANK"},
}
# cycles a request may wait for room before the stream is given up (a livelocked drain); fcfs behind per-bank
# refresh makes a request wait up to ~125k cycles
STALL_LIMIT = 300_000

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


def _drive(engine, requests, add, finished) -> int:
    """Offer the requests at their cycles (each as soon as there is room), then run until `finished()` (every added
    request completed) or 2M cycles on; return how many were added. Both engines see the same calls as long as
    they behave the same."""
    added = len(requests)
    for i, (cycle, addr, write) in enumerate(requests):
        engine.run_until(max(cycle, engine.clk))
        waited = 0
        while not engine.will_accept(addr, write) and waited < STALL_LIMIT:
            engine.run_until(engine.clk + 1)
            waited += 1
        if waited == STALL_LIMIT:
            added = i
            break
        add(i, addr, write)
    end = engine.clk + 2_000_000  # long enough for the slowest request (fcfs behind per-bank refresh)
    while engine.clk < end and not finished():
        engine.run_until(min(end, engine.clk + 20_000))
    return added


def _spec(config: str, request: pytest.FixtureRequest):
    if config in VARIANTS:
        return dataclasses.replace(load_spec("ddr4_8gb_x8_3200"), name=config, **VARIANTS[config])
    if config.endswith(".ini"):
        return load_spec(request.getfixturevalue("shipped_dir") / "configs" / config)
    return load_spec(config)


def _compare(native_dir, spec, requests) -> tuple[int, int]:
    """Run `requests` on both engines; assert the same command log and completion cycles; return (requests
    added, requests completed)."""
    from memsim.cosim.native_engine import NativeEngine

    system = MemorySystem(spec, functional=False)
    python_done = {}

    def add_python(i, addr, write):
        python_done[i] = system.add_transaction(addr, write, tag=i)

    class PythonSide:  # MemorySystem's clock under the name the driver uses
        clk = property(lambda self: system.clk)
        will_accept = staticmethod(system.will_accept)
        run_until = staticmethod(system.run_until)

    added = _drive(PythonSide(), requests, add_python, lambda: all(t.complete_cycle >= 0 for t in python_done.values()))
    native = NativeEngine(spec, build_dir=native_dir, log_commands=True)
    native_done: dict[int, int] = {}

    def native_finished() -> bool:
        native_done.update(native.completions())
        return len(native_done) == len(python_done)

    def add_native(i, addr, write):
        native.add_transaction(addr, write, i)

    assert _drive(native, requests, add_native, native_finished) == added
    native_done.update(native.completions())
    assert native.clk == system.clk
    python_cycles = {i: t.complete_cycle for i, t in python_done.items() if t.complete_cycle >= 0}
    assert native_done == python_cycles
    commands = system.issued_commands()
    assert native.issued_commands() == [(*tuple(int(x) for x in c[:7]), bool(c[7])) for c in commands]
    return added, len(native_done)


@pytest.mark.parametrize("config", [*preset_names(), *VARIANTS, *SHIPPED_INI])
def test_native_engine_matches_the_python_engine(native_dir, request, config: str) -> None:
    spec = _spec(config, request)
    assert spec.mode == ("dramsim3" if config.endswith(".ini") else VARIANTS.get(config, {}).get("mode", "jedec"))
    requests = _requests(sum(map(ord, config)), MemorySystem(spec, functional=False), 3000)
    assert _compare(native_dir, spec, requests) == (len(requests), len(requests))  # every request completed


def test_write_drain_livelock_in_dramsim3_mode_only(native_dir) -> None:
    """A full write buffer whose first movable write waits for a read of its address: in dramsim3 mode both engines
    stall for good at the same cycle (DRAMSim3's livelock); in jedec mode both move a read and finish."""
    base = load_spec("ddr4_8gb_x8_3200")
    trace = random_trace(base, 2000, seed=7, write_fraction=0.3, max_gap=6, locality=0.3)
    requests = list(zip(trace.cycles.tolist(), trace.addrs.tolist(), trace.is_write.tolist(), strict=True))
    outcome = {mode: _compare(native_dir, dataclasses.replace(base, mode=mode), requests) for mode in
               ("jedec", "dramsim3")}  # fmt: skip
    assert outcome["jedec"] == (2000, 2000)
    added, completed = outcome["dramsim3"]
    assert added < 2000 and completed < added


@pytest.mark.parametrize("feature", NOT_MODELLED)
def test_native_engine_refuses_what_it_does_not_model(feature: str) -> None:
    from memsim.cosim.native_config import native_config_text

    spec = dataclasses.replace(load_spec("ddr5_16gb_x8_4800"), **NOT_MODELLED[feature])
    with pytest.raises(MemsimError) as err:
        native_config_text(spec)
    message = str(err.value)
    assert "\n" not in message
    assert f"native engine (like its compiled engine) does not model {feature.strip()};" in message
    assert "turn it off in the config" in message


def test_native_engine_refuses_refresh_management() -> None:
    from memsim.cosim.native_config import native_config_text
    from memsim.presets import preset_sections
    from memsim.spec import spec_from_sections

    sections = preset_sections("ddr5_16gb_x8_4800")
    sections["timing"] = {**sections["timing"], "RAAIMT": 8}
    with pytest.raises(MemsimError, match="does not model DDR5 same-bank refresh or refresh management"):
        native_config_text(spec_from_sections(sections, name="ddr5_rfm"))
    sections["timing"]["RAAIMT"] = 0
    assert native_config_text(spec_from_sections(sections, name="ddr5")).startswith("memsim-native-config 2\n")


def test_native_engine_refuses_a_config_of_another_version(native_dir, tmp_path) -> None:
    """A config written by an older memsim (another K layout) is refused by name, not misread."""
    import ctypes

    from memsim.cosim.native_config import VERSION, native_config_text
    from memsim.cosim.native_engine import load_library

    lib = load_library(native_dir)
    text = native_config_text("ddr4_8gb_x8_3200")
    for version, ok in ((VERSION, True), (VERSION - 1, False)):
        path = tmp_path / f"v{version}.cfg"
        path.write_text(text.replace(f"memsim-native-config {VERSION}", f"memsim-native-config {version}", 1))
        err = ctypes.create_string_buffer(512)
        handle = lib.memsim_engine_open(str(path).encode(), err, len(err))
        assert bool(handle) == ok
        if ok:
            lib.memsim_engine_close(handle)
        else:
            assert err.value.decode() == (f"{path} is not a memsim native config of version {VERSION}; write it again "
                                          "with this memsim (zaya memsim cosim simdram CONFIG -o DIR)")  # fmt: skip
