"""`zaya memsim rtl verify CONFIG TRACE --cycles N`: the generated RTL under Verilator against memsim's Python
engine, on the same trace, cycle by cycle.

Both sides get the same requests (the trace, each write carrying seeded random bytes) through the same
frontend rules (`memsim.trace.TraceFrontend`; the test bench replays its decisions). Compared: every DRAM
command (cycle, channel, command, rank, bank group, bank, row, column) and every read (the cycle it completes
and the bytes it returns); the RTL's command stream also goes through `memsim.checker`. Identical means
equal lists, and zero protocol violations.
"""

import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from memsim.build_dirs import default_build_dir
from memsim.channel_params import ChannelParams
from memsim.checker import check_commands
from memsim.commands import SHORT_NAMES, Cmd
from memsim.errors import MemsimError
from memsim.memory_system import MemorySystem
from memsim.rtl.channel_params import channel_params
from memsim.rtl.generate import generate_rtl
from memsim.rtl.harness import build_simulator
from memsim.spec import DramSpec
from memsim.trace import Trace, TraceFrontend

DEFAULT_BUILD_ROOT = Path(tempfile.gettempdir()) / "memsim-rtl-builds"  # without MEMSIM_BUILD_CACHE


def default_build_root() -> Path:
    """Where Verilator builds go unless told: `$MEMSIM_BUILD_CACHE/rtl-builds`, else DEFAULT_BUILD_ROOT."""
    return default_build_dir("rtl-builds")


Command = tuple[int, int, int, int, int, int, int, int]  # cycle, channel, cmd, rank, bankgroup, bank, row, column


@dataclass
class Verification:
    """What `verify` found: equal command streams and reads, and the checker's verdict."""

    commands: int
    reads: int
    reads_completed: int
    cycles: int
    mismatches: list[str] = field(default_factory=list)
    violations: list[str] = field(default_factory=list)
    rtl_wall_s: float = 0.0

    @property
    def identical(self) -> bool:
        return not self.mismatches and not self.violations


def write_bytes(n: int, line_bytes: int, seed: int) -> np.ndarray:
    """Seeded random data, one line per request index (only the writes' rows are used)."""
    return np.random.default_rng(seed).integers(0, 256, size=(n, line_bytes), dtype=np.uint8)


def local_address(p: ChannelParams, addr: int) -> int:
    """A byte address as the channel's local address {rank, bank group, bank, row, column, offset}."""
    m = p.mapping
    where = m.decode(addr)
    value = 0
    for name, v in zip(("ra", "bg", "ba", "ro", "co"), where[1:], strict=True):
        value = (value << m.widths[name]) | v
    return (value << m.shift_bits) | (addr & ((1 << m.shift_bits) - 1))


def _python_run(system: MemorySystem, trace: Trace, cycles: int, data: np.ndarray) -> TraceFrontend:
    frontend = TraceFrontend(system, trace, write_data=lambda i: data[i].tobytes())
    frontend.run(cycles, engine="python")
    return frontend


def _python_commands(system: MemorySystem) -> list[Command]:
    spec = system.spec
    out = []
    for cyc, ch, cmd, rank, bank, row, col, _ in system.issued_commands():
        within = bank % spec.banks
        out.append((cyc, ch, cmd, rank, within // spec.banks_per_group, within % spec.banks_per_group, row, col))
    return out


def _request_list(frontend: TraceFrontend, data: np.ndarray, path: Path) -> None:
    start = frontend.n if frontend.one_shot == 0 and frontend.cycles[0] > 0 else 0  # as TraceFrontend.__init__
    lines = [f"{frontend.n} {start} {frontend.one_shot}"]
    for i, (addr, write, cyc) in enumerate(zip(frontend.locations.tolist(), frontend.writes, frontend.cycles,
                                                strict=True)):  # fmt: skip
        payload = int.from_bytes(data[i].tobytes(), "little") if write else 0
        lines.append(f"{cyc} {int(write)} {addr:x} {payload:x}")
    path.write_text("\n".join(lines) + "\n")


def parse_log(p: ChannelParams, log: Path):
    """The test bench log's commands (as `Command`s), read responses and accepted requests."""
    spec = p.spec
    bpr_bits = p.banks_per_rank.bit_length() - 1
    commands, responses, accepts = [], [], []
    for line in log.read_text().splitlines():
        parts = line.split()
        if parts[0] == "C":
            cyc, ch, kind, bank, has_addr, row, col = map(int, parts[1:])
            within = bank % spec.banks
            commands.append((cyc, ch, kind, bank >> bpr_bits, within // spec.banks_per_group,
                             within % spec.banks_per_group, row if has_addr else -1, col if has_addr else -1))  # fmt: skip
        elif parts[0] in "RF":
            responses.append((parts[0], int(parts[1]), int(parts[2]), int(parts[3], 16), int(parts[4], 16)))
        else:
            accepts.append((int(parts[1]), int(parts[2]), int(parts[3])))
    return commands, responses, accepts


def _rtl_reads(p: ChannelParams, frontend: TraceFrontend, responses, accepts) -> dict[int, tuple[int, int]]:
    """request index -> (completion cycle, data as an int) for every read the RTL completed."""
    channel_of, locations = frontend.channel_of, frontend.locations.tolist()
    waiting: dict[tuple[int, int], list[tuple[int, int]]] = {}  # (channel, address) -> (index, cycle offered)
    forwarded: dict[int, list[int]] = {}
    done: dict[int, tuple[int, int]] = {}
    events = [(cyc, 0, "A", idx, fwd) for cyc, idx, fwd in accepts] + [(r[1], 1, r) for r in responses]
    events.sort(key=lambda e: (e[0], e[1]))  # a response in cycle c answers requests accepted before c
    for event in events:
        if event[2] == "A":
            _, _, _, idx, fwd = event
            if frontend.writes[idx]:
                continue
            ch = channel_of[idx]
            if fwd:
                forwarded.setdefault(ch, []).append(idx)
            else:
                waiting.setdefault((ch, local_address(p, locations[idx])), []).append((idx, event[0]))
        else:
            kind, cyc, ch, addr, value = event[2]
            if kind == "F":
                queue = forwarded.get(ch, [])
                if queue:
                    done[queue.pop(0)] = (cyc, value)
            else:
                # a read offered in cycle c is served by a RD issued from c + 1 on; a response to an earlier RD of
                # the same address (still in flight when it arrived) is not its own
                issued = cyc - p.read_delay
                pending = waiting.get((ch, addr), [])
                for idx, offered in pending:
                    if offered < issued:
                        done[idx] = (cyc, value)
                waiting[(ch, addr)] = [w for w in pending if w[1] >= issued]
    return done


def verify(config: str | Path, trace: Trace, cycles: int, mode: str | None = None, strict: bool = False,
           build_root: Path | None = None, seed: int = 0, max_report: int = 10) -> Verification:  # fmt: skip
    """Run `trace` for `cycles` cycles on the RTL (Verilator) and on memsim's Python engine; compare."""
    system = MemorySystem(config, functional=True, mode=mode, strict=strict)
    p = channel_params(system.spec)
    data = write_bytes(max(len(trace) + 1, 1), system.line_bytes, seed)
    frontend = _python_run(system, trace, cycles, data)
    expected_cmds = _python_commands(system)
    build_root = build_root or default_build_root()
    with tempfile.TemporaryDirectory(prefix="memsim-rtl-") as tmp:
        tmp = Path(tmp)
        rtl = generate_rtl(system.spec, tmp / "rtl")
        exe = build_simulator(rtl, p, build_root)
        _request_list(frontend, data, tmp / "requests.txt")
        done = subprocess.run([str(exe), str(tmp / "requests.txt"), str(cycles), str(tmp / "rtl.log")],
                              capture_output=True, text=True)  # fmt: skip
        if done.returncode != 0:
            raise MemsimError(f"the RTL simulation failed: {(done.stdout + done.stderr)[-2000:]}")
        wall = float(done.stdout.split()[5])  # "cycles N accepted N wall_s S cpu_s S"
        got_cmds, responses, accepts = parse_log(p, tmp / "rtl.log")
    result = Verification(len(expected_cmds), 0, 0, cycles, rtl_wall_s=wall)
    for i, (want, got) in enumerate(zip(expected_cmds, got_cmds, strict=False)):
        if want != got:
            result.mismatches.append(f"command {i}: memsim {_show(want)}, RTL {_show(got)}")
            break
    if len(expected_cmds) != len(got_cmds) and not result.mismatches:
        result.mismatches.append(f"memsim issued {len(expected_cmds)} commands, the RTL {len(got_cmds)}")
    rtl_reads = _rtl_reads(p, frontend, responses, accepts)
    for trans in frontend.accepted:
        if trans.is_write:
            continue
        result.reads += 1
        want = None
        if 0 <= trans.complete_cycle < cycles:
            want = (trans.complete_cycle, int.from_bytes(trans.data or bytes(system.line_bytes), "little"))
            result.reads_completed += 1
        got = rtl_reads.get(trans.tag)
        if want != got and len(result.mismatches) < max_report:
            result.mismatches.append(f"read {trans.tag} ({trans.addr:#x}): memsim {_show_read(want)}, RTL "
                                     f"{_show_read(got)}")  # fmt: skip
    extra = set(rtl_reads) - {t.tag for t in frontend.accepted}
    if extra:
        result.mismatches.append(f"the RTL completed {len(extra)} reads memsim never accepted (e.g. {min(extra)})")
    result.violations = protocol_violations(system.spec, got_cmds, cycles)
    return result


def protocol_violations(spec: DramSpec, commands: list[Command], cycles: int) -> list[str]:
    """`memsim.checker`'s findings on an RTL command stream (as `parse_log` returns it) of `cycles` cycles."""
    flat = [(c[0], c[1], c[2], c[3], (c[3] * spec.bankgroups + c[4]) * spec.banks_per_group + c[5], c[6], c[7], False)
            for c in commands]  # fmt: skip
    return [str(v) for v in check_commands(spec, flat, cycles)]


def _show(c: Command | None) -> str:
    if c is None:
        return "nothing"
    return (f"cycle {c[0]} ch {c[1]} {SHORT_NAMES[Cmd(c[2])]} rank {c[3]} bg {c[4]} bank {c[5]} row {c[6]} "
            f"col {c[7]}")  # fmt: skip


def _show_read(r: tuple[int, int] | None) -> str:
    return "not completed" if r is None else f"completed at {r[0]} with data {r[1] & 0xFFFFFFFF:#010x}..."
