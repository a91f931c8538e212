"""Statistics of one channel with DRAMSim3's names, computed from the controller's event logs.

The controller logs what happened (commands with their cycle and row-hit flag, completed transactions,
arrivals, power-state changes); counting happens here, once, with numpy, for any cycle window: the whole
run (DRAMSim3's final stats) or one epoch.
"""

from collections import Counter
from typing import Any

import numpy as np

from memsim.commands import Cmd
from memsim.controller import ChannelController
from memsim.power import EnergyModel

_COUNTED = {
    "num_act_cmds": (Cmd.ACTIVATE,), "num_pre_cmds": (Cmd.PRECHARGE,), "num_ref_cmds": (Cmd.REFRESH,),
    "num_refb_cmds": (Cmd.REFRESH_BANK,), "num_srefe_cmds": (Cmd.SREF_ENTER,), "num_srefx_cmds": (Cmd.SREF_EXIT,),
    "num_read_cmds": (Cmd.READ, Cmd.READ_PRECHARGE), "num_write_cmds": (Cmd.WRITE, Cmd.WRITE_PRECHARGE),
}  # fmt: skip
HISTOGRAMS = {"read_latency": (0, 200, 10), "write_latency": (0, 200, 10), "interarrival_latency": (0, 100, 10)}


def histogram_bins(name: str, values: Counter) -> dict[str, int]:
    """DRAMSim3's binned view: `name[-start]`, `name[a-b]` for each bin, `name[end-]`."""
    start, end, n = HISTOGRAMS[name]
    width = (end - start) // n
    bins = [0] * (n + 2)
    for value, count in values.items():
        idx = 0 if value < start else n + 1 if value > end else (value - start) // width + 1
        bins[idx] += count
    labels = [f"{name}[-{start}]"]
    labels += [f"{name}[{start + i * width}-{start + (i + 1) * width - 1}]" for i in range(n)]
    labels.append(f"{name}[{end}-]")
    return dict(zip(labels, bins, strict=True))


def _counts(values) -> Counter:
    """value -> occurrences (numpy's unique: much faster than Counter on long logs)."""
    keys, counts = np.unique(np.asarray(values, dtype=np.int64), return_counts=True)
    return Counter(dict(zip(keys.tolist(), counts.tolist(), strict=True)))


def _average(values: Counter) -> float:
    count = sum(values.values())
    return sum(v * c for v, c in values.items()) / count if count else 0.0


def _power_cycles(ctrl: ChannelController, start: int, end: int, ranks: int) -> list[list[int]]:
    """Cycles per power state (ACTIVE, IDLE, SELF_REFRESH, POWER_DOWN) per rank within [start, end)."""
    cycles = [[0] * ranks for _ in range(4)]
    runs = ctrl.power_runs
    for i, (begin, state) in enumerate(runs):
        stop = runs[i + 1][0] if i + 1 < len(runs) else end
        lo, hi = max(begin, start), min(stop, end)
        if hi <= lo:
            continue
        for r in range(ranks):
            cycles[state[r]][r] += hi - lo
    return cycles


def channel_stats(ctrl: ChannelController, num_cycles: int, start: int = 0, epoch_num: int = 0) -> dict[str, Any]:
    """DRAMSim3's per-channel stats object for cycles [start, num_cycles)."""
    spec = ctrl.spec
    energy = EnergyModel.from_spec(spec)
    cmds = ctrl.command_array()[:, [0, 1, 6]]
    window = cmds[(cmds[:, 0] >= start) & (cmds[:, 0] < num_cycles)]
    counts = np.bincount(window[:, 1], minlength=len(Cmd))
    out: dict[str, Any] = {"channel": ctrl.channel, "epoch_num": epoch_num, "num_cycles": num_cycles - start}
    for name, kinds in _COUNTED.items():
        out[name] = int(sum(counts[k] for k in kinds))
    hits = window[window[:, 2] == 1]
    out["num_read_row_hits"] = int(np.isin(hits[:, 1], (Cmd.READ, Cmd.READ_PRECHARGE)).sum())
    out["num_write_row_hits"] = int(np.isin(hits[:, 1], (Cmd.WRITE, Cmd.WRITE_PRECHARGE)).sum())
    done = ctrl.completed_array()
    done = done[(done[:, 0] >= start) & (done[:, 0] < num_cycles)]
    read_lat = _counts(done[done[:, 2] == 0, 1])
    out["num_reads_done"] = sum(read_lat.values())
    out["num_writes_done"] = int(done[:, 2].sum())
    out["num_write_buf_hits"] = 0
    out["num_ondemand_pres"] = ctrl.cmdq.scheduler.ondemand_precharges if start == 0 else None
    out["hbm_dual_cmds"] = sum(1 for c in ctrl.dual_issue_cycles if start <= c < num_cycles)
    histos = {"read_latency": read_lat, "write_latency": _counts(ctrl.write_latencies),
              "interarrival_latency": _counts(ctrl.interarrivals)}  # fmt: skip
    for name, values in histos.items():
        out[name] = {str(k): v for k, v in sorted(values.items())} or None
        out.update(histogram_bins(name, values))
    active, idle, sref, pd = _power_cycles(ctrl, start, num_cycles, spec.ranks)
    per_rank = lambda values, scale=1: {str(r): values[r] * scale for r in range(spec.ranks)}  # noqa: E731
    out["rank_active_cycles"] = per_rank(active)
    out["all_bank_idle_cycles"] = per_rank(idle)
    out["sref_cycles"] = per_rank(sref)
    out["act_energy"] = out["num_act_cmds"] * energy.act
    out["read_energy"] = out["num_read_cmds"] * energy.read
    out["write_energy"] = out["num_write_cmds"] * energy.write
    out["ref_energy"] = out["num_ref_cmds"] * energy.ref
    out["refb_energy"] = out["num_refb_cmds"] * energy.refb
    out["act_stb_energy"] = per_rank(active, energy.act_standby)
    out["pre_stb_energy"] = per_rank(idle, energy.pre_standby)
    out["sref_energy"] = per_rank(sref, energy.self_refresh)
    background = 0.0
    for r in map(str, range(spec.ranks)):  # DRAMSim3's order of summation, so that the floats are identical
        background += out["act_stb_energy"][r] + out["pre_stb_energy"][r] + out["sref_energy"][r]
    extra = 0.0  # energy of memsim's own commands, beyond DRAMSim3's (their stats appear only when enabled)
    if spec.refresh_policy == "SAME_BANK":
        out["num_refsb_cmds"] = int(counts[Cmd.REFRESH_SAME_BANK])
        out["refsb_energy"] = out["num_refsb_cmds"] * energy.refb
        extra += out["refsb_energy"]
    if spec.t("RAAIMT"):
        out["num_rfm_cmds"] = int(counts[Cmd.RFM])
        out["rfm_energy"] = out["num_rfm_cmds"] * energy.rfm
        extra += out["rfm_energy"]
    if spec.enable_power_down:
        out["num_pde_cmds"] = int(counts[Cmd.PD_ENTER])
        out["num_pdx_cmds"] = int(counts[Cmd.PD_EXIT])
        out["pd_cycles"] = per_rank(pd)
        out["pre_pd_energy"] = per_rank(pd, energy.pre_powerdown)
        background += sum(out["pre_pd_energy"].values())
    total = sum(out[k] for k in ("act_energy", "read_energy", "write_energy", "ref_energy", "refb_energy"))
    cycles = max(1, num_cycles - start)
    out["total_energy"] = total + background + extra
    out["average_power"] = out["total_energy"] / cycles
    out["average_bandwidth"] = (
        (out["num_reads_done"] + out["num_writes_done"]) * spec.request_size_bytes / (cycles * spec.tCK_ns)
    )
    out["average_read_latency"] = _average(read_lat)
    out["average_interarrival"] = _average(histos["interarrival_latency"])
    return dict(sorted(out.items()))
