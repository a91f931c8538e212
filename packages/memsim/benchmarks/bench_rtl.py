"""memsim's generated RTL: simulated DRAM cycles per second under Verilator against memsim's compiled engine
and DRAMSim3, on the shared reference runs; and yosys synthesis of the channel (cells, flip-flops, latches).

Speed, per reference run (`../shared/reference/dramsim3`: trace, DRAMSim3 config, cycle count):
- rtl: the Verilator simulation of `<prefix>_top` (every channel) on the run's requests, logging nothing; the
  simulation loop's CPU time (the build excluded, cached; CPU time because the machine is shared);
- compiled: memsim's compiled engine (C++) on the same trace, after a warm-up run (library load excluded),
  CPU time of the run (trace frontend included);
- dramsim3: the run's recorded `wall_s` in index.json (the whole DRAMSim3 process on a 2-core machine: an upper
  bound on its time, so its cycles/s is a lower bound).
Each is the best of --repeats. Before timing, the RTL is verified identical on the run (`memsim.rtl.verify`).
Synthesis (--synth CONFIG ...): `memsim.rtl.synth.synthesize` on each config's channel.
Writes bench_rtl.json and bench_rtl.png into --out.

    python packages/memsim/benchmarks/bench_rtl.py --out /tmp/bench_rtl
    python packages/memsim/benchmarks/bench_rtl.py --out /tmp/bench_rtl --no-speed --synth ddr4_8gb_x8_3200 hbm2_8gb_x128
"""

import argparse
import json
import os
import platform
import subprocess
import tempfile
import time
import warnings
from datetime import UTC, datetime
from pathlib import Path

from memsim.memory_system import MemorySystem
from memsim.rtl.channel_params import channel_params
from memsim.rtl.generate import generate_rtl
from memsim.rtl.harness import build_simulator
from memsim.rtl.verify import DEFAULT_BUILD_ROOT, _python_run, _request_list, verify, write_bytes
from memsim.trace import TraceFrontend, read_trace
from rich.progress import Progress
from zaya_config.atomic import write_text_atomic

REFERENCE = Path(__file__).resolve().parents[3].parent / "shared" / "reference" / "dramsim3"


def _commit() -> str:
    done = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                          cwd=Path(__file__).parent)  # fmt: skip
    return done.stdout.strip()


def _rtl_seconds(config: Path, trace_path: Path, cycles: int, repeats: int) -> float:
    system = MemorySystem(config, functional=True)
    trace = read_trace(trace_path)
    data = write_bytes(len(trace) + 1, system.line_bytes, 0)
    frontend = _python_run(system, trace, 1, data)  # only the request list is needed: one cycle
    with tempfile.TemporaryDirectory() as tmp:
        rtl = generate_rtl(system.spec, Path(tmp) / "rtl")
        exe = build_simulator(rtl, channel_params(system.spec), DEFAULT_BUILD_ROOT)
        _request_list(frontend, data, Path(tmp) / "requests.txt")
        best = float("inf")
        for _ in range(repeats):
            out = subprocess.run([str(exe), str(Path(tmp) / "requests.txt"), str(cycles), "--quiet"],
                                 capture_output=True, text=True, check=True).stdout  # fmt: skip
            words = out.split()
            best = min(best, float(words[7]))  # cpu_s: the simulation loop's CPU time (a shared machine)
    return best


def _compiled_seconds(config: Path, trace_path: Path, cycles: int, repeats: int) -> float:
    trace = read_trace(trace_path)
    TraceFrontend(MemorySystem(config, functional=False), trace).run(min(cycles, 1000), engine="compiled")
    best = float("inf")
    for _ in range(repeats):
        system = MemorySystem(config, functional=False)
        started = time.process_time()
        TraceFrontend(system, trace).run(cycles, engine="compiled")
        best = min(best, time.process_time() - started)
    return best


def speed(repeats: int, only: str | None) -> list[dict]:
    runs = json.loads((REFERENCE / "index.json").read_text())["runs"]
    runs = [r for r in runs if only is None or any(o in r["config"] for o in only.split(","))]
    rows = []
    with Progress() as progress:
        task = progress.add_task("reference runs", total=len(runs))
        for run in runs:
            config, trace, cycles = REFERENCE / run["config"], REFERENCE / run["trace"], run["cycles"]
            check = verify(config, read_trace(trace), cycles, build_root=DEFAULT_BUILD_ROOT)
            rtl_s = _rtl_seconds(config, trace, cycles, repeats)
            compiled_s = _compiled_seconds(config, trace, cycles, repeats)
            rows.append({"trace": run["trace"], "config": run["config"], "cycles": cycles,
                         "identical": check.identical, "commands": check.commands,
                         "rtl_s": rtl_s, "compiled_s": compiled_s, "dramsim3_process_s": run["wall_s"],
                         "rtl_cycles_per_s": cycles / rtl_s, "compiled_cycles_per_s": cycles / compiled_s,
                         "dramsim3_cycles_per_s_lower_bound": cycles / run["wall_s"]})  # fmt: skip
            progress.advance(task)
    return rows


def synth(configs: list[str], out: Path) -> list[dict]:
    from memsim.rtl.synth import synthesize
    from memsim.spec import load_spec

    rows = []
    for config in configs:
        spec = load_spec(config)
        rtl = generate_rtl(spec, out / f"synth_{spec.name}")
        started = time.perf_counter()
        report = synthesize(rtl, out / f"synth_{spec.name}" / "yosys.log")
        rows.append({"config": config, "cells": report.cells, "flip_flops": report.flip_flops,
                     "latches": report.latches, "memory_bits": report.memory_bits,
                     "yosys_warnings": report.warnings, "yosys_s": time.perf_counter() - started,
                     "cell_types": report.cell_types})  # fmt: skip
        print(rows[-1])
    return rows


def plot(rows: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = [f"{Path(r['trace']).stem}\n{Path(r['config']).stem}" for r in rows]
    x = range(len(rows))
    fig, ax = plt.subplots(figsize=(max(8, len(rows) * 0.7), 5))
    for k, (key, name) in enumerate((("rtl_cycles_per_s", "RTL (Verilator)"),
                                     ("compiled_cycles_per_s", "memsim compiled"),
                                     ("dramsim3_cycles_per_s_lower_bound", "DRAMSim3 (lower bound)"))):  # fmt: skip
        ax.bar([i + (k - 1) * 0.27 for i in x], [r[key] for r in rows], width=0.27, label=name)
    ax.set_yscale("log")
    ax.set_ylabel("simulated DRAM cycles / s")
    ax.set_xticks(list(x), labels, rotation=90, fontsize=7)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--only", help="only reference configs whose name contains one of these (comma-separated)")
    parser.add_argument("--no-speed", action="store_true")
    parser.add_argument("--synth", nargs="*", default=[], help="configs to synthesize with yosys")
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    args.out.mkdir(parents=True, exist_ok=True)
    result = {"date": datetime.now(UTC).isoformat(timespec="seconds"), "commit": _commit(),
              "machine": f"{platform.machine()} {os.cpu_count()} CPUs, {platform.platform()}",
              "load_average": os.getloadavg()}  # fmt: skip
    if not args.no_speed:
        result["speed"] = speed(args.repeats, args.only)
        plot(result["speed"], args.out / "bench_rtl.png")
    if args.synth:
        result["synth"] = synth(args.synth, args.out)
    write_text_atomic(args.out / "bench_rtl.json", json.dumps(result, indent=1) + "\n")
    print(json.dumps({k: v for k, v in result.items() if k != "synth"}, indent=1)[:3000])


if __name__ == "__main__":
    main()
