"""Writing results: DRAMSim3-style stats.json, per-epoch summaries, command logs and plots (atomically)."""

import json
from pathlib import Path
from typing import Any

from zaya_config.atomic import write_atomic, write_text_atomic

from memsim.memory_system import MemorySystem
from memsim.stats import channel_stats

EPOCH_KEYS = ("num_cycles", "num_reads_done", "num_writes_done", "average_read_latency", "average_bandwidth",
              "num_act_cmds", "num_read_row_hits", "num_write_row_hits", "total_energy", "average_power")  # fmt: skip


def epoch_summaries(system: MemorySystem, num_cycles: int) -> list[dict[str, Any]]:
    """One summary per channel and epoch of `epoch_period` cycles (the last one may be partial)."""
    period = system.spec.epoch_period
    out = []
    for start in range(0, num_cycles, period):
        end = min(start + period, num_cycles)
        for ctrl in system.channels:
            s = channel_stats(ctrl, end, start=start)
            out.append({"epoch": start // period, "channel": ctrl.channel, "start_cycle": start,
                        **{k: s[k] for k in EPOCH_KEYS}})  # fmt: skip
    return out


def plot_latency_histogram(stats: dict[str, dict[str, Any]], path: Path, title: str) -> bool:
    """Read-latency histogram over all channels as a PNG; False when matplotlib is not installed."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    lat: dict[int, int] = {}
    for ch in stats.values():
        for k, v in (ch["read_latency"] or {}).items():
            lat[int(k)] = lat.get(int(k), 0) + v
    fig, ax = plt.subplots(figsize=(7, 3.5))
    if lat:
        ax.bar(list(lat), list(lat.values()), width=1.0)
    ax.set_xlabel("read latency (cycles)")
    ax.set_ylabel("reads")
    ax.set_title(title)
    fig.tight_layout()
    write_atomic(path, lambda handle: fig.savefig(handle, format="png", dpi=110))
    plt.close(fig)
    return True


def write_run(system: MemorySystem, num_cycles: int, out: Path, plots: bool = True) -> dict[str, dict[str, Any]]:
    """stats.json (DRAMSim3's names, one object per channel), epochs.json, and a latency plot."""
    stats = system.stats(num_cycles)
    write_text_atomic(out / "stats.json", json.dumps(stats, indent=1))
    write_text_atomic(out / "epochs.json", json.dumps(epoch_summaries(system, num_cycles), indent=1))
    if plots:
        plot_latency_histogram(stats, out / "read_latency.png", f"{system.spec.name}: read latency")
    return stats
