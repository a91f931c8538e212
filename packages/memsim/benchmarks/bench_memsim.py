"""memsim on DRAMSim3's reference runs: accuracy table and simulated requests per second.

Runs every reference run (config x trace x cycle count from index.json), times memsim in this process
(simulation plus loading, CPU time and wall time) and compares with DRAMSim3's wall time from
index.json, which is a whole `dramsim3main` process (start included) on a 2-core x86-64 machine.
A longer synthetic run shows memsim's per-request cost and how idle time is skipped.
CPU only. Usage: python benchmarks/bench_memsim.py --out OUT [--smoke] [--reference DIR]
"""

import argparse
import csv
import json
import platform
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve()
sys.path.insert(0, str(HERE.parents[1] / "src"))

from memsim import MemorySystem, TraceFrontend, read_trace  # noqa: E402
from memsim.fuzz import random_trace  # noqa: E402
from memsim.results import write_atomic  # noqa: E402

DEFAULT_REFERENCE = HERE.parents[4] / "shared" / "reference" / "dramsim3"
KEYS = ("average_read_latency", "average_bandwidth", "num_read_row_hits")


def _sum(stats: dict, key: str) -> float:
    return sum(ch[key] for ch in stats.values())


def _mean_latency(stats: dict) -> float:
    reads = _sum(stats, "num_reads_done")
    return sum(ch["average_read_latency"] * ch["num_reads_done"] for ch in stats.values()) / max(reads, 1)


def run_reference(reference: Path, runs: list[dict], repeats: int) -> list[dict]:
    rows = []
    for run in runs:
        best_cpu = best_wall = float("inf")
        for _ in range(repeats):
            w0, c0 = time.perf_counter(), time.process_time()
            system = MemorySystem(reference / run["config"], functional=False)
            TraceFrontend(system, read_trace(reference / run["trace"])).run(run["cycles"])
            stats = system.stats(run["cycles"])
            best_cpu = min(best_cpu, time.process_time() - c0)
            best_wall = min(best_wall, time.perf_counter() - w0)
        ref = json.loads((reference / run["stats"]).read_text())
        worst = max(abs(stats[ch][k] - ref[ch][k]) / max(abs(ref[ch][k]), 1e-12) for ch in ref for k in KEYS)
        done = int(_sum(stats, "num_reads_done") + _sum(stats, "num_writes_done"))
        rows.append({
            "run": run["stats"].split("/")[1], "cycles": run["cycles"], "requests_done": done,
            "memsim_latency": _mean_latency(stats), "dramsim3_latency": _mean_latency(ref),
            "memsim_bw_gbps": _sum(stats, "average_bandwidth"), "dramsim3_bw_gbps": _sum(ref, "average_bandwidth"),
            "memsim_row_hits": int(_sum(stats, "num_read_row_hits")), "dramsim3_row_hits": int(_sum(ref, "num_read_row_hits")),
            "worst_rel_error_per_channel": worst,
            "memsim_cpu_s": best_cpu, "memsim_wall_s": best_wall, "dramsim3_wall_s": run["wall_s"],
            "memsim_req_per_s_cpu": done / best_cpu, "dramsim3_req_per_s": run["requests_done"] / run["wall_s"],
        })  # fmt: skip
        print(f"{rows[-1]['run']:48s} err {worst:.2e}  memsim {best_cpu:6.3f}s cpu  dramsim3 {run['wall_s']:.3f}s")
    return rows


def run_synthetic(n: int, gap: int) -> dict:
    system = MemorySystem("ddr4_8gb_x8_3200", functional=False)
    trace = random_trace(system.spec, n, seed=0, write_fraction=0.3, max_gap=gap, locality=0.2)
    cycles = int(trace.cycles[-1]) + 20_000
    c0 = time.process_time()
    TraceFrontend(system, trace).run(cycles)
    cpu = time.process_time() - c0
    stats = system.stats(cycles)
    done = int(_sum(stats, "num_reads_done") + _sum(stats, "num_writes_done"))
    return {"requests": n, "max_gap": gap, "cycles": cycles, "requests_done": done, "cpu_s": cpu,
            "req_per_s": done / cpu, "cycles_per_s": cycles / cpu}  # fmt: skip


def plot(rows: list[dict], path: Path) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return
    fig, ax = plt.subplots(figsize=(11, 4.5))
    x = range(len(rows))
    ax.bar([i - 0.2 for i in x], [r["memsim_req_per_s_cpu"] for r in rows], width=0.4, label="memsim (CPU time)")
    ax.bar([i + 0.2 for i in x], [r["dramsim3_req_per_s"] for r in rows], width=0.4, label="DRAMSim3 (process wall)")
    ax.set_yscale("log")
    ax.set_xticks(list(x), [r["run"].replace("__", "\n") for r in rows], rotation=90, fontsize=6)
    ax.set_ylabel("simulated requests / s")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--reference", type=Path, default=DEFAULT_REFERENCE)
    parser.add_argument("--smoke", action="store_true", help="two small runs only")
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    index = args.reference / "index.json"
    runs = json.loads(index.read_text())["runs"] if index.is_file() else []
    if args.smoke:
        runs = [r for r in runs if "gap200" in r["trace"]][:2]
    rows = run_reference(args.reference, runs, 1 if args.smoke else args.repeats)
    synthetic = [run_synthetic(2_000 if args.smoke else 50_000, gap) for gap in ((4, 400) if not args.smoke else (4,))]
    result = {"machine": f"{platform.machine()} {platform.processor() or ''}".strip(), "python": platform.python_version(),
              "date": time.strftime("%Y-%m-%d"), "reference_runs": rows, "synthetic": synthetic}  # fmt: skip
    write_atomic(args.out / "bench_memsim.json", json.dumps(result, indent=1))
    if rows:
        with open(args.out / "bench_memsim.csv", "w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)
        plot(rows, args.out / "bench_memsim_speed.png")
    print(f"\n{'run':48s} {'lat ms/d3':>16s} {'GB/s ms/d3':>14s} {'memsim req/s':>13s} {'DRAMSim3 req/s':>15s}")
    for r in rows:
        print(f"{r['run']:48s} {r['memsim_latency']:7.1f}/{r['dramsim3_latency']:7.1f} "
              f"{r['memsim_bw_gbps']:6.2f}/{r['dramsim3_bw_gbps']:6.2f} {r['memsim_req_per_s_cpu']:13,.0f} "
              f"{r['dramsim3_req_per_s']:15,.0f}")  # fmt: skip
    for s in synthetic:
        print(f"synthetic {s['requests']} requests, gaps 0..{s['max_gap']}: {s['req_per_s']:,.0f} req/s, "
              f"{s['cycles_per_s']:,.0f} simulated cycles/s")  # fmt: skip


if __name__ == "__main__":
    main()
