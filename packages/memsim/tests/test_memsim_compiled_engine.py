"""The compiled engine (memsim's C++ engine, through ctypes) against the Python engine: same commands, stats and
final state; and what happens without a C++ compiler."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from memsim import MemorySystem, MemsimError, TraceFrontend
from memsim.build_dirs import default_build_dir
from memsim.compiled import available, bridge
from memsim.fuzz import random_trace
from memsim.presets import preset_names, preset_sections
from memsim.spec import spec_from_sections

COMPILED = pytest.mark.skipif(not available(), reason="memsim's C++ engine cannot be built here (no C++ compiler)")

VARIANTS = {
    "close_page": {"row_buf_policy": "CLOSE_PAGE"},
    "per_rank_queues": {"queue_structure": "PER_RANK"},
    "fcfs": {"scheduler": "fcfs"},
    "fcfs_per_rank": {"scheduler": "fcfs", "queue_structure": "PER_RANK"},
    "bank_refresh": {"refresh_policy": "BANK_LEVEL_STAGGERED"},
    "simultaneous_refresh": {"refresh_policy": "RANK_LEVEL_SIMULTANEOUS"},
    "unified_queue": {"unified_queue": "True"},
    "small_queues": {"cmd_queue_size": "2", "trans_queue_size": "4", "write_drain_threshold": "2"},
    "write_buf_size": {"write_buf_size": "6", "trans_queue_size": "12"},
    "dramsim3_mode": {"mode": "dramsim3"},
    "dramsim3_simultaneous": {"mode": "dramsim3", "refresh_policy": "RANK_LEVEL_SIMULTANEOUS"},
    "dramsim3_bank_refresh": {"mode": "dramsim3", "refresh_policy": "BANK_LEVEL_STAGGERED"},
}


def _variant(name: str, **system: str):
    sections = preset_sections(name)
    return spec_from_sections({**sections, "system": {**sections["system"], **system}}, name=name)


def snapshot(system: MemorySystem) -> list[dict]:
    """Everything a controller keeps (logs and state), in comparable form; `where` is a cache and left out."""
    out = []
    for c in system.channels:
        st, q = c.state, c.cmdq
        trans = lambda t: (t.addr, t.is_write, t.added_cycle, t.complete_cycle)  # noqa: E731
        out.append({
            "logs": (c.commands, c.completed, c.interarrivals, c.write_latencies, c.dual_issue_cycles, c.power_runs),
            "banks": (st.earliest, st.state, st.open_row, st.row_hits, st.act_windows, st.open_banks_in_rank),
            "queues": ([trans(t) for t in c.read_queue], [trans(t) for t in c.write_buffer],
                       {a: [trans(t) for t in v] for a, v in c.pending_reads.items()},
                       {a: trans(t) for a, t in c.pending_writes.items()}, c.pending_write_data),
            "refresh": (c.refresh_queue, c.refresh.next_due, c.refresh.pushed),
            "scalars": (c.write_draining, c.next_wake, c.last_arrival, c.power_dirty),
            "cmdq": ([[(x.cmd, x.addr, x.rank, x.bankgroup, x.bank_in_group, x.bank, x.row, x.column) for x in queue]
                      for queue in q.queues], q.bound, q.queue_idx, q.count, q.dirty, q.in_refresh,
                     q.refresh_queues, q.scheduler.ondemand_precharges),
        })  # fmt: skip
    return out


def _run(spec, trace, cycles: int, engine: str) -> tuple[MemorySystem, TraceFrontend]:
    system = MemorySystem(spec, functional=False)
    frontend = TraceFrontend(system, trace)
    frontend.run(cycles, engine=engine)
    return system, frontend


def _assert_same(spec, trace, cycles: int) -> None:
    fast, _ = _run(spec, trace, cycles, "compiled")
    slow, _ = _run(spec, trace, cycles, "python")
    assert fast.issued_commands() == slow.issued_commands()
    assert fast.stats() == slow.stats()
    assert snapshot(fast) == snapshot(slow)


@COMPILED
@pytest.mark.parametrize("name", preset_names())
def test_presets_same_as_python(name: str) -> None:
    system = MemorySystem(name, functional=False)
    _assert_same(system.spec, random_trace(system.spec, 1200, seed=3, write_fraction=0.4, max_gap=4), 25_000)


@COMPILED
@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_controller_variants_same_as_python(variant: str) -> None:
    spec = _variant("ddr4_8gb_x8_3200", **VARIANTS[variant])
    _assert_same(spec, random_trace(spec, 1200, seed=5, write_fraction=0.45, max_gap=3, locality=0.6), 25_000)


@COMPILED
def test_python_continues_where_the_compiled_engine_stopped() -> None:
    """The exported state is complete: compiled to 8k cycles then Python to 30k equals Python throughout."""
    spec = _variant("hbm2_8gb_x128")
    trace = random_trace(spec, 3000, seed=8, write_fraction=0.3, max_gap=6, locality=0.6)
    fast, frontend = _run(spec, trace, 8_000, "compiled")
    assert 0 < frontend.index < frontend.n  # stopped mid-trace, with requests in flight
    assert any(c.read_queue or c.cmdq.count for c in fast.channels)
    frontend.run(30_000)  # no longer fresh: "auto" runs the Python engine
    slow, _ = _run(spec, trace, 30_000, "python")
    assert snapshot(fast) == snapshot(slow)
    fast.drain()
    slow.drain()
    assert fast.stats() == slow.stats()


@COMPILED
def test_command_log_grows(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bridge, "MIN_COMMAND_LOG", 8)
    spec = _variant("lpddr4_8gb_x16_2400")
    trace = random_trace(spec, 20, seed=1, max_gap=30_000)  # sparse: mostly refreshes, far more than 4 per request
    _assert_same(spec, trace, 1_000_000)


@COMPILED
def test_progress_is_reported(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bridge, "CHUNK_CYCLES", 10_000)
    system = MemorySystem("ddr4_8gb_x8_3200", functional=False)
    seen: list[int] = []
    TraceFrontend(system, random_trace(system.spec, 300, seed=2)).run(50_000, progress=seen.append, engine="compiled")
    assert len(seen) >= 4 and seen == sorted(seen) and seen[-1] == 50_000  # idle skips may pass a chunk's end


def test_engine_choice_errors(monkeypatch: pytest.MonkeyPatch) -> None:
    system = MemorySystem("ddr4_8gb_x8_3200", functional=False)
    frontend = TraceFrontend(system, random_trace(system.spec, 50, seed=0))
    with pytest.raises(MemsimError, match="engine 'turbo'; allowed: auto, python, compiled"):
        frontend.run(100, engine="turbo")
    monkeypatch.setenv("MEMSIM_ENGINE", "bogus")
    with pytest.raises(MemsimError, match="engine 'bogus'"):
        frontend.run(100)
    monkeypatch.delenv("MEMSIM_ENGINE")
    system.add_transaction(0x40, False)  # no longer fresh
    with pytest.raises(MemsimError, match="already simulated or queued"):
        frontend.run(100, engine="compiled")


PARSER_CASES = [
    "", "0x10 READ 5\n", "10 write 7", "0X1f\tP_MEM_WR\t9\r\n0x20 P_FETCH 10\n", "0x1 READ 5\r",
    "0x READ 5\n", "0x1 READ 5 6\n", "0x1 READ\n", "0x1 READ 5\n\n0x2 READ 6\n", "0x1 FOO 5\n", "-0x1 READ 5\n",
    "0x1 READ -5\n", "0x1 READX 5\n", "0x" + "f" * 18 + " READ 1\n", "# comment\n0x1 READ 5\n", "0x1g READ 5\n",
    "0x1 READ 5x\n", " \t0x40  boff  3 \n", "0x1\rREAD 5\n",
]  # fmt: skip


@pytest.mark.parametrize("text", PARSER_CASES)
def test_compiled_parser_agrees_or_defers(text: str) -> None:
    """The compiled parser either reads a text exactly as the Python parser does or leaves it to it."""
    from memsim.trace import _parse_compiled, _parse_lines

    fast = _parse_compiled(text, "<t>")
    if fast is None:
        return
    slow = _parse_lines(text, "<t>")
    for key in ("addrs", "is_write", "cycles"):
        assert (
            getattr(fast, key).tolist() == getattr(slow, key).tolist()
            and getattr(fast, key).dtype == getattr(slow, key).dtype
        )
    assert fast.ends_with_newline == slow.ends_with_newline


@COMPILED
def test_compiled_parser_reads_a_generated_trace() -> None:
    from memsim.trace import _parse_compiled, _parse_lines

    spec = _variant("ddr4_8gb_x8_3200")
    tr = random_trace(spec, 3000, seed=4)
    text = "".join(
        f"{a:#x} {'WRITE' if w else 'READ'} {c}\n" for a, w, c in zip(tr.addrs, tr.is_write, tr.cycles, strict=True)
    )
    fast, slow = _parse_compiled(text, "<t>"), _parse_lines(text, "<t>")
    assert fast is not None
    assert fast.addrs.tolist() == slow.addrs.tolist() == tr.addrs.tolist()
    assert fast.cycles.tolist() == slow.cycles.tolist() and fast.is_write.tolist() == slow.is_write.tolist()


def test_without_a_compiler_compiled_is_one_clear_line_and_python_runs(monkeypatch, tmp_path) -> None:
    """No C++ compiler: engine="compiled" says so in one line; "python" and "auto" run on the Python engine."""
    cxx = str(tmp_path / "no-such-c++")
    monkeypatch.setenv("CXX", cxx)
    spec = _variant("ddr4_8gb_x8_3200")
    trace = random_trace(spec, 300, seed=6, write_fraction=0.3)
    with pytest.raises(MemsimError) as err:
        _run(spec, trace, 10_000, "compiled")
    assert str(err.value) == (f"engine 'compiled' cannot run: no C++ compiler {cxx!r} found: apt-get install -y g++ "
                              "(or set CXX); use engine='python'")  # fmt: skip
    python, _ = _run(spec, trace, 10_000, "python")
    auto, _ = _run(spec, trace, 10_000, "auto")
    assert python.stats()["0"]["num_reads_done"] > 0
    assert auto.issued_commands() == python.issued_commands() and auto.stats() == python.stats()


def _setup_build_line() -> str:
    """The line of `make setup` (the Makefile's $(STAMP) recipe) that builds the C++ engine, with $(BIN) resolved."""
    recipe = (Path(__file__).resolve().parents[3] / "Makefile").read_text().split("$(STAMP): ", 1)[1].split("\n\n")[0]
    lines = [line.strip() for line in recipe.splitlines() if "memsim build-engine" in line]
    assert len(lines) == 1, recipe
    return lines[0].replace("$(BIN)", str(Path(sys.executable).parent))


@pytest.mark.parametrize("missing", ["CXX", "PATH"])
def test_setup_without_a_compiler_says_so_in_one_line_and_goes_on(tmp_path: Path, missing: str) -> None:
    """`make setup`'s engine build with no compiler (CXX names none, or PATH has none): exit 0, one line naming
    the compiler and that trace runs use the Python engine."""
    env = {**os.environ, "MEMSIM_BUILD_CACHE": str(tmp_path / "cache")}
    if missing == "CXX":
        env["CXX"] = str(tmp_path / "no-such-c++")
    else:
        env.pop("CXX", None)
        env["PATH"] = str(tmp_path / "empty")  # the line names the interpreter's `zaya` by its full path
    done = subprocess.run(
        ["/bin/bash", "-c", _setup_build_line()], capture_output=True, text=True, env=env, timeout=120
    )
    assert done.returncode == 0 and done.stdout == "", (done.stdout, done.stderr)
    compiler = env.get("CXX", "g++")
    assert done.stderr == (f"memsim: C++ engine not built: no C++ compiler {compiler!r} found: apt-get install -y g++ "
                           "(or set CXX); trace runs will use the Python engine\n")  # fmt: skip
    assert not (tmp_path / "cache").exists() or not list((tmp_path / "cache").rglob("*.so"))


@pytest.mark.skipif(shutil.which(os.environ.get("CXX", "g++")) is None, reason="no C++ compiler")
def test_setup_builds_the_engine_where_trace_runs_load_it() -> None:
    """With a compiler the line builds (here: finds, in the tests' build cache) the library trace runs load."""
    done = subprocess.run(["/bin/bash", "-c", _setup_build_line()], capture_output=True, text=True, timeout=600)
    folder = default_build_dir("native")
    assert done.returncode == 0 and done.stdout == f"memsim: C++ engine ready in {folder}\n", done.stderr
    assert (folder / "libmemsim_native.so").is_file() and available()
