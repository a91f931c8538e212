"""Where the suite's CPU goes: the machine's CPU time over the whole run, and, on request, each test's own.

The suite is CPU-bound on two cores, so its wall time is about the CPU-seconds it burns over the cores it
gets. Two things change the wall without any test changing: cores that stand idle (a worker waiting on a
subprocess that sleeps, or on the other worker's last long test) and time the hypervisor takes (`steal`).
The terminal summary says both for the whole run (from /proc/stat, all processes of the machine, the
suite's and anything else that ran meanwhile):

    cpu census: 2 cores x 890 s wall: busy 1,702 s (user 1,410, system 292), idle 70 s, steal 8 s; 9,000 tasks started

With `ZAYA_CPU_CENSUS=FILE`, every test also appends a JSON line to FILE: its wall seconds, the CPU seconds
of its own worker process (`self_cpu`) and of every process it started and waited for, with their own
children (`children_cpu`, from getrusage, and the ranks tests/warm_ranks.py forked for it: a process nobody
waited for, such as a Slurm job, is not counted).
`python tests/cpu_census.py FILE` prints the tests that cost the most CPU.
"""

from __future__ import annotations

import json
import os
import resource
import sys
import time
from pathlib import Path

import pytest

CENSUS_ENV = "ZAYA_CPU_CENSUS"
_STAT_FIELDS = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")


def machine_cpu_seconds() -> dict[str, float]:
    """The machine's CPU seconds since boot by kind, all cores together (the `cpu` line of /proc/stat), and
    `processes`, the count of tasks (processes and threads) started since boot; empty where /proc/stat is not there."""
    try:
        lines = Path("/proc/stat").read_text().splitlines()
    except OSError:
        return {}
    ticks = os.sysconf("SC_CLK_TCK")
    found = {name: int(value) / ticks for name, value in zip(_STAT_FIELDS, lines[0].split()[1:], strict=False)}
    forks = [line.split()[1] for line in lines if line.startswith("processes ")]
    if forks:
        found["processes"] = float(forks[0])
    return found


def census_line(began: dict[str, float], ended: dict[str, float], wall: float) -> str:
    """One line for the whole run: busy (user + nice + system + irq), idle (idle + iowait) and steal."""
    d = {k: ended.get(k, 0.0) - began.get(k, 0.0) for k in (*_STAT_FIELDS, "processes")}
    user, system = d["user"] + d["nice"], d["system"] + d["irq"] + d["softirq"]
    return (
        f"cpu census: {os.cpu_count()} cores x {wall:,.0f} s wall: busy {user + system:,.0f} s "
        f"(user {user:,.0f}, system {system:,.0f}), idle {d['idle'] + d['iowait']:,.0f} s, steal {d['steal']:,.0f} s; "
        f"{d['processes']:,.0f} tasks started (processes and threads)"
    )


def _forked_ranks_cpu() -> float:
    """The CPU of the ranks tests/warm_ranks.py forked for this process so far (0 where it was not used)."""
    warm = sys.modules.get("warm_ranks")
    return getattr(warm, "RANKS_CPU_SECONDS", 0.0)


def _cpu(usage: resource.struct_rusage) -> float:
    return usage.ru_utime + usage.ru_stime


def pytest_sessionstart(session: pytest.Session) -> None:
    session.config.stash[_began] = (time.monotonic(), machine_cpu_seconds())


def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:
    began = config.stash.get(_began, None)
    if began is None or hasattr(config, "workerinput"):  # xdist workers report nothing of their own
        return
    wall0, cpu0 = began
    if cpu0:
        terminalreporter.write_line(census_line(cpu0, machine_cpu_seconds(), time.monotonic() - wall0))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None):
    target = os.environ.get(CENSUS_ENV)
    if not target:
        yield
        return
    wall0, forked0 = time.monotonic(), _forked_ranks_cpu()
    self0, kids0 = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    yield
    self1, kids1 = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    record = {
        "test": item.nodeid,
        "wall": round(time.monotonic() - wall0, 3),
        "self_cpu": round(_cpu(self1) - _cpu(self0), 3),
        "children_cpu": round(_cpu(kids1) - _cpu(kids0) + _forked_ranks_cpu() - forked0, 3),
        "worker": os.environ.get("PYTEST_XDIST_WORKER", "main"),
    }
    with open(target, "a", encoding="utf-8") as out:  # one short O_APPEND write per line: workers never interleave
        out.write(json.dumps(record) + "\n")


_began = pytest.StashKey[tuple[float, dict[str, float]]]()


def main(argv: list[str]) -> int:
    if len(argv) not in (1, 2) or not Path(argv[0]).is_file():
        print("usage: python tests/cpu_census.py CENSUS_FILE [N]   (N: how many tests to list, default 40)")
        return 2
    rows = [json.loads(line) for line in Path(argv[0]).read_text(encoding="utf-8").splitlines() if line]
    for row in rows:
        row["cpu"] = row["self_cpu"] + row["children_cpu"]
    total, wall = sum(r["cpu"] for r in rows), sum(r["wall"] for r in rows)
    print(f"{len(rows)} tests: {total:,.0f} CPU-s of their own, {wall:,.0f} s summed wall")
    print(f"{'cpu':>7} {'self':>6} {'kids':>6} {'wall':>6}  test")
    for r in sorted(rows, key=lambda r: -r["cpu"])[: int(argv[1]) if len(argv) == 2 else 40]:
        print(f"{r['cpu']:7.1f} {r['self_cpu']:6.1f} {r['children_cpu']:6.1f} {r['wall']:6.1f}  {r['test']}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
