"""memsim on DRAMSim3's reference runs: accuracy table and simulated requests per second.

Runs every reference run (config x trace x cycle count from index.json), times memsim in this process
(loading + simulation + stats, CPU time and wall time, best of --repeats) on each engine (pure Python,
and the compiled one, memsim's C++ engine, after a warm-up whose one-off cost is reported)
and compares with DRAMSim3's wall time from index.json, which is a whole `dramsim3main` process (start
included) on a 2-core x86-64 machine.
A longer synthetic run shows memsim's per-request cost and how idle time is skipped.
CPU only. Usage: python benchmarks/bench_memsim.py --out OUT [--smoke] [--reference DIR] [--engines python,compiled]
(DIR: ../shared/reference/dramsim3, or ../shared/reference/dramsim3-configs for every shipped config; HMC's
runs are skipped, HMC is not modelled)
"""

import argparse
import csv
import json
import os
import platform
import sys
import time
import warnings
from pathlib import Path

HERE = Path(__file__).resolve()
sys.path.insert(0, str(HERE.parents[1] / "src"))
sys.path.insert(1, str(HERE.parents[2] / "zaya-config" / "src"))  # zaya_config.atomic (stdlib only)

from memsim import MemorySystem, TraceFrontend, read_trace  # noqa: E402
from memsim.compiled import available  # noqa: E402
from memsim.fuzz import random_trace  # noqa: E402
from zaya_config.atomic import write_text_atomic  # noqa: E402

DEFAULT_REFERENCE = HERE.parents[4] / "shared" / "reference" / "dramsim3"
KEYS = ("average_read_latency", "average_bandwidth", "num_read_row_hits")


def _sum(stats: dict, key: str) -> float:
    return sum(ch[key] for ch in stats.values())


def _mean_latency(stats: dict) -> float:
    reads = _sum(stats, "num_reads_done")
    return sum(ch["average_read_latency"] * ch["num_reads_done"] for ch in stats.values()) / max(reads, 1)


def _time_run(reference: Path, run: dict, engine: str, repeats: int) -> tuple[float, float, dict]:
    """Best CPU and wall time of load + simulation + stats over `repeats` runs."""
    best_cpu = best_wall = float("inf")
    for _ in range(repeats):
        w0, c0 = time.perf_counter(), time.process_time()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the shipped configs' defaults and unmodelled keys, reported elsewhere
            system = MemorySystem(reference / run["config"], functional=False)
        TraceFrontend(system, read_trace(reference / run["trace"])).run(run["cycles"], engine=engine)
        stats = system.stats(run["cycles"])
        best_cpu = min(best_cpu, time.process_time() - c0)
        best_wall = min(best_wall, time.perf_counter() - w0)
    return best_cpu, best_wall, stats


def warm_up(reference: Path, runs: list[dict], engine: str) -> float | None:
    """CPU seconds of a compiled engine's one-off start in this process (library build check and load)."""
    if not runs:
        return None
    c0 = time.process_time()
    _time_run(reference, min(runs, key=lambda r: r["requests_done"]), engine, 1)
    return time.process_time() - c0


def run_reference(reference: Path, runs: list[dict], repeats: int, engines: list[str]) -> list[dict]:
    rows = []
    for run in runs:
        row = {"run": run["stats"].split("/")[1], "cycles": run["cycles"]}
        ref = json.loads((reference / run["stats"]).read_text())
        for engine in engines:
            cpu, wall, stats = _time_run(reference, run, engine, repeats)
            done = int(_sum(stats, "num_reads_done") + _sum(stats, "num_writes_done"))
            worst = max(abs(stats[ch][k] - ref[ch][k]) / max(abs(ref[ch][k]), 1e-12) for ch in ref for k in KEYS)
            row.update({f"{engine}_cpu_s": cpu, f"{engine}_wall_s": wall, f"{engine}_req_per_s_cpu": done / cpu,
                        f"{engine}_cycles_per_s_cpu": run["cycles"] / cpu, f"{engine}_worst_rel_error": worst,
                        f"{engine}_identical": stats == ref})  # fmt: skip
        row.update({
            "requests_done": done, "memsim_latency": _mean_latency(stats), "dramsim3_latency": _mean_latency(ref),
            "memsim_bw_gbps": _sum(stats, "average_bandwidth"), "dramsim3_bw_gbps": _sum(ref, "average_bandwidth"),
            "memsim_row_hits": int(_sum(stats, "num_read_row_hits")), "dramsim3_row_hits": int(_sum(ref, "num_read_row_hits")),
            "dramsim3_wall_s": run["wall_s"], "dramsim3_req_per_s": run["requests_done"] / run["wall_s"],
        })  # fmt: skip
        rows.append(row)
        times = "  ".join(f"{e} {row[f'{e}_cpu_s']:6.3f}s cpu" for e in engines)
        print(f"{row['run']:48s} {times}  dramsim3 {run['wall_s']:.3f}s wall")
    return rows


def run_synthetic(n: int, gap: int, engine: str) -> dict:
    system = MemorySystem("ddr4_8gb_x8_3200", functional=False)
    trace = random_trace(system.spec, n, seed=0, write_fraction=0.3, max_gap=gap, locality=0.2)
    cycles = int(trace.cycles[-1]) + 20_000
    c0 = time.process_time()
    TraceFrontend(system, trace).run(cycles, engine=engine)
    cpu = time.process_time() - c0
    stats = system.stats(cycles)
    done = int(_sum(stats, "num_reads_done") + _sum(stats, "num_writes_done"))
    return {"engine": engine, "requests": n, "max_gap": gap, "cycles": cycles, "requests_done": done, "cpu_s": cpu,
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
    engines = [e for e in ("python", "compiled") if f"{e}_req_per_s_cpu" in rows[0]]
    width = 0.8 / (len(engines) + 1)
    for k, engine in enumerate(engines):
        ax.bar([i + (k - len(engines) / 2) * width for i in x], [r[f"{engine}_req_per_s_cpu"] for r in rows],
               width=width, label=f"memsim {engine} (CPU time)")  # fmt: skip
    ax.bar(
        [i + len(engines) / 2 * width for i in x],
        [r["dramsim3_req_per_s"] for r in rows],
        width=width,
        label="DRAMSim3 (process wall)",
    )
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
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--engines", default="python,compiled", help="comma-separated: python, compiled")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    engines = [e for e in args.engines.split(",") if e != "compiled" or available()]
    index = args.reference / "index.json"
    runs = json.loads(index.read_text())["runs"] if index.is_file() else []
    skipped = [r["config"] for r in runs if "/HMC" in r["config"]]  # HMC is not modelled
    runs = [r for r in runs if r["config"] not in skipped]
    if args.smoke:
        runs = [r for r in runs if "gap200" in r["trace"]][:2]
    warm = {e: warm_up(args.reference, runs, e) for e in engines if e != "python"}
    rows = run_reference(args.reference, runs, 1 if args.smoke else args.repeats, engines)
    n_syn = 2_000 if args.smoke else 50_000
    synthetic = [run_synthetic(n_syn, gap, e) for gap in ((4,) if args.smoke else (4, 400)) for e in engines]
    result = {"machine": f"{platform.machine()} {platform.processor() or ''}".strip(), "python": platform.python_version(),
              "cpu_count": os.cpu_count(), "date": time.strftime("%Y-%m-%d"), "engines": engines,
              "engine_start_cpu_s": warm, "reference": str(args.reference), "skipped_not_modelled": skipped,
              "reference_runs": rows, "synthetic": synthetic}  # fmt: skip
    write_text_atomic(args.out / "bench_memsim.json", json.dumps(result, indent=1))
    if rows:
        with open(args.out / "bench_memsim.csv", "w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)
        plot(rows, args.out / "bench_memsim_speed.png")
    heads = "".join(f" {e + ' req/s':>16s}" for e in engines)
    print(f"\n{'run':48s} {'lat ms/d3':>16s} {'GB/s ms/d3':>14s}{heads} {'DRAMSim3 req/s':>15s}")
    for r in rows:
        speeds = "".join(f" {r[f'{e}_req_per_s_cpu']:16,.0f}" for e in engines)
        print(f"{r['run']:48s} {r['memsim_latency']:7.1f}/{r['dramsim3_latency']:7.1f} "
              f"{r['memsim_bw_gbps']:6.2f}/{r['dramsim3_bw_gbps']:6.2f}{speeds} {r['dramsim3_req_per_s']:15,.0f}")  # fmt: skip
    for s in synthetic:
        print(f"synthetic {s['engine']}: {s['requests']} requests, gaps 0..{s['max_gap']}: {s['req_per_s']:,.0f} req/s, "
              f"{s['cycles_per_s']:,.0f} simulated cycles/s")  # fmt: skip
    for engine, cpu in warm.items():
        if cpu is not None:
            print(f"{engine} engine start (first run in the process, smallest run included): {cpu:.2f} s CPU")


if __name__ == "__main__":
    main()
