"""Host side of an AXI co-simulation run: the traffic files before, the checks after.

A `MasterRun` describes one `axi_burst_master` of the top (`memsim.cosim.testbench_top`) and how
`AxiMemory` serves it: memsim config, traffic parameters, design:memory clock ratio, backpressure.
`prepare` writes its traffic and returns its plusargs; the cocotb side (`memsim.cosim.axi_testbench`)
rebuilds the same traffic from the same seed; `check` reads the master's log and the port's record and
checks data and protocol (`axi_traffic.check_log`) and each read's latency against memsim's.
"""

import json
from dataclasses import asdict, dataclass
from pathlib import Path

from memsim.cosim.axi_burst import AxiProtocolError
from memsim.cosim.axi_traffic import (
    LogSummary,
    TrafficBurst,
    check_log,
    expected_reads,
    initial_image,
    random_traffic,
    write_master_files,
)  # fmt: skip
from memsim.cosim.clock_domains import ClockDomains
from memsim.spec import load_spec


@dataclass(frozen=True)
class MasterRun:
    """One master's traffic and the port serving it (JSON-able, passed to the simulation by environment)."""

    prefix: str
    data_bits: int
    count: int
    seed: int = 1
    config: str = "ddr4_8gb_x8_3200"
    id_bits: int = 2
    base: int = 0x10000
    span: int = 1 << 16
    ratio: str = "1"  # design clock : memory clock
    stall: int = 0  # percent: the port withholds AR/AW/W ready, the master RREADY/BREADY and its valids
    isolated: bool = False  # every burst waits for the one before (unloaded latency)

    @property
    def data_bytes(self) -> int:
        return self.data_bits // 8

    def traffic(self) -> list[TrafficBurst]:
        out = random_traffic(self.seed, self.count, self.data_bytes, self.id_bits, self.base, self.span)
        if self.isolated:
            for item in out:
                item.barrier = True
        return out

    def clocks(self) -> ClockDomains:
        return ClockDomains.from_ratio(load_spec(self.config).tCK_ns, self.ratio)


def encode_runs(runs: list[MasterRun], folder: Path) -> str:
    """The MEMSIM_AXI_RUNS value for the cocotb side."""
    return json.dumps({"folder": str(folder), "runs": [asdict(r) for r in runs]})


def decode_runs(text: str) -> tuple[Path, list[MasterRun]]:
    data = json.loads(text)
    return Path(data["folder"]), [MasterRun(**r) for r in data["runs"]]


def prepare(run: MasterRun, folder: Path, traffic: list[TrafficBurst] | None = None) -> list[str]:
    """Write the master's files under `folder/<prefix>` (its `traffic`, by default `run.traffic()`); return its
    plusargs."""
    where = folder / run.prefix
    args = write_master_files(run.traffic() if traffic is None else traffic, run.data_bytes, where)
    args = [f"+{run.prefix}_{a[1:]}" for a in args]
    return [*args, f"+{run.prefix}_log={where / 'master.log'}", f"+{run.prefix}_stall={run.stall}",
            f"+{run.prefix}_gap={run.stall}"]  # fmt: skip


def record_path(run: MasterRun, folder: Path) -> Path:
    return folder / run.prefix / "port.json"


def check(run: MasterRun, folder: Path) -> tuple[LogSummary, dict]:
    """Check the master's log against the model, and each read's first beat against memsim's latency."""
    from memsim.cosim.axi_port import PORT_CYCLES

    traffic = run.traffic()
    image = initial_image(run.seed, run.base, run.span)
    expected = expected_reads(traffic, run.data_bytes, {run.base + i: b for i, b in enumerate(image)})
    summary = check_log(folder / run.prefix / "master.log", traffic, run.data_bytes, expected)
    record = json.loads(record_path(run, folder).read_text())
    clocks = run.clocks()
    reads = [k for k, t in enumerate(traffic) if not t.is_write]
    if len(reads) != len(record["reads"]):
        raise AxiProtocolError(
            f"{run.prefix}: the port saw {len(record['reads'])} read bursts, the master sent {len(reads)}"
        )
    for k, port_read in zip(reads, record["reads"], strict=True):
        # the port's edges and the master's cycle counter differ by a constant offset
        offset = port_read["accept_edge"] - summary.address_cycle[k]
        if [c + offset for c in summary.response_cycles[k]] != port_read["edges"]:
            raise AxiProtocolError(f"{run.prefix}: burst {k}: the master saw its beats at other cycles than the port")
        ready = [a + clocks.design_cycles(lat) + PORT_CYCLES
                 for a, lat in zip(port_read["add_edges"], port_read["latencies"], strict=True)]  # fmt: skip
        if port_read["edges"][0] < ready[0]:  # the first line holds the first beat
            raise AxiProtocolError(f"{run.prefix}: burst {k}: first beat before memsim's data was ready")
    return summary, record


def simulate(runner, build_dir: Path, runs: list[MasterRun], folder: Path, log_file: Path | None = None,
             top: str = "axi_test_top") -> dict[str, tuple[LogSummary, dict]]:  # fmt: skip
    """Run the masters of `runs` on a built top (cocotb runner), then check each; prefix -> (log summary, record)."""
    from cocotb_tools.runner import get_results

    plusargs = [a for run in runs for a in prepare(run, folder)]
    results = runner.test(hdl_toplevel=top, test_module="memsim.cosim.axi_testbench",
                          testcase="burst_masters_against_memsim", build_dir=build_dir, test_dir=folder / "sim",
                          plusargs=plusargs, extra_env={"MEMSIM_AXI_RUNS": encode_runs(runs, folder)},
                          log_file=log_file)  # fmt: skip
    if get_results(results) != (1, 0):
        raise AxiProtocolError(f"the simulation failed; its log is in {log_file or folder / 'sim'}")
    return {run.prefix: check(run, folder) for run in runs}
