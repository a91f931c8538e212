"""Design cycles per second of memsim's three RTL paths on the same traffic.

The traffic is `hdl/axi_dma.v` (64-bit AXI, 16-beat bursts, 4 IDs): fill, copy and check --kib KiB, a
1 GHz design clock on DDR4-3200 (memsim's tCK 0.63 ns). Paths:
- cocotb-icarus:    AxiMemory (Python, memsim's Python engine) serving the DMA under Icarus Verilog
- cocotb-verilator: the same under Verilator
- dpi-verilator:    SimDRAM.sv + libmemsim_simdram.so (native engine, DPI) under Verilator, C++ main
Each path runs --repeats times after its build on the same --kib; the DPI path also runs --dpi-kib (a run
long enough to time well). The figures are design cycles per wall second and per CPU second of the simulation
loop (builds and simulator start-up excluded; the whole simulator process is reported as process_s); on a
shared machine the CPU-second figure is the steadier one.
Writes bench_cosim.json and bench_cosim.png into --out.

    python packages/memsim/benchmarks/bench_cosim.py --out /tmp/bench_cosim
"""

import argparse
import json
import os
import platform
import subprocess
import time
from datetime import UTC, datetime
from pathlib import Path

from memsim.cosim import HDL_DIR
from memsim.cosim.simdram_harness import build_harness, run_harness
from memsim.cosim.simulators import build_once
from memsim.errors import MemsimError
from rich.progress import Progress

CONFIG = "ddr4_8gb_x8_3200"


def _cocotb_run(simulator: str, folder: Path, kib: int) -> dict:
    runner = build_once(simulator, folder, [HDL_DIR / "axi_dma.v"], "axi_dma")
    result_file = folder / "result.json"
    started = time.perf_counter()
    runner.test(hdl_toplevel="axi_dma", test_module="memsim.cosim.axi_testbench", testcase="dma_against_memsim",
                build_dir=folder / "build", test_dir=folder / "sim", log_file=folder / "sim.log",
                extra_env={"MEMSIM_CONFIG": CONFIG, "MEMSIM_DESIGN_MHZ": "1000",
                           "MEMSIM_DMA_BYTES": str(kib * 1024), "MEMSIM_DMA_RESULT": str(result_file)})  # fmt: skip
    if not result_file.is_file():
        raise MemsimError(f"{simulator}: the DMA run failed; see {folder / 'sim.log'}")
    result = json.loads(result_file.read_text())
    result_file.unlink()
    result["process_s"] = time.perf_counter() - started
    return result


def _dpi_run(folder: Path, kib: int) -> dict:
    exe = build_harness(folder)
    started = time.perf_counter()
    result = run_harness(exe, CONFIG, folder / "run", dma_bytes=kib * 1024)
    result["process_s"] = time.perf_counter() - started
    return result


def _commit() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                              cwd=Path(__file__).parent).stdout.strip()  # fmt: skip
    except OSError:
        return "unknown"


def _plot(rows: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3))
    names = [r["path"] for r in rows]
    speeds = [r["cycles_per_cpu_s"] for r in rows]
    ax.barh(names, speeds, color=["#888", "#58a", "#2a6", "#184"][: len(rows)])
    ax.set_xscale("log")
    ax.set_xlim(min(speeds) / 2, max(speeds) * 6)
    ax.set_xlabel("design cycles per CPU second (log)")
    ax.axvline(100_000, color="red", linestyle="--", linewidth=1, label="target for DPI: 100k")
    for y, v in enumerate(speeds):
        ax.text(v, y, f" {v:,.0f}", va="center")
    ax.legend(loc="lower right", fontsize=8)
    ax.set_title("memsim RTL paths, same DMA traffic")
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("bench_cosim"))
    parser.add_argument("--kib", type=int, default=64, help="KiB the DMA fills, copies and checks")
    parser.add_argument("--dpi-kib", type=int, default=4096, help="KiB for the (fast) DPI path")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--paths", default="cocotb-icarus,cocotb-verilator,dpi-verilator,dpi-verilator-long")
    parser.add_argument("--smoke", action="store_true", help="tiny sizes, one repeat (for the test suite)")
    args = parser.parse_args()
    if args.smoke:
        args.kib, args.dpi_kib, args.repeats = 4, 64, 1
    out = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    paths = args.paths.split(",")
    rows = []
    with Progress() as progress:
        task = progress.add_task("paths", total=len(paths) * args.repeats)
        for name in paths:
            runs = []
            for _ in range(args.repeats):
                if name.startswith("dpi-verilator"):
                    kib = args.dpi_kib if name.endswith("-long") else args.kib
                    runs.append(_dpi_run(out / "dpi-verilator", kib))
                else:
                    runs.append(_cocotb_run(name.split("-")[1], out / name, args.kib))
                progress.advance(task)
            best = max(runs, key=lambda r: r["cycles_per_cpu_s"])
            if any(r["errors"] or not r["done"] for r in runs):
                raise MemsimError(f"{name}: the DMA saw bad data")
            rows.append({"path": name, "kib": args.dpi_kib if name.endswith("-long") else args.kib,
                         "design_cycles": best["cycles"], "wall_s": best["wall_s"], "cpu_s": best["cpu_s"],
                         "cycles_per_s": best["cycles_per_s"], "cycles_per_cpu_s": best["cycles_per_cpu_s"],
                         "process_s": best["process_s"], "all_cycles_per_s": [r["cycles_per_s"] for r in runs]})  # fmt: skip
    result = {
        "what": "design cycles per second of memsim's RTL paths on the axi_dma traffic (1 GHz design, DDR4-3200)",
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "commit": _commit(),
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform(), "python": platform.python_version(),
                    "load_average": os.getloadavg()},
        "config": CONFIG,
        "rows": rows,
    }  # fmt: skip
    (out / "bench_cosim.json").write_text(json.dumps(result, indent=1))
    _plot(rows, out / "bench_cosim.png")
    for r in rows:
        print(f"{r['path']:18s} {r['kib']:6d} KiB {r['design_cycles']:>10,d} cycles {r['cycles_per_s']:>12,.0f} "
              f"cycles/s {r['cycles_per_cpu_s']:>12,.0f} cycles/CPU-s")  # fmt: skip
    print(f"wrote {out / 'bench_cosim.json'} and {out / 'bench_cosim.png'}")


if __name__ == "__main__":
    main()
