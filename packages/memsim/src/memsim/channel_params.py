"""One channel's controller constants for memsim's engines other than the Python one: the C++ engine
(`memsim.compiled.bridge` writes them into the K array it runs on) and the generated RTL (`memsim.rtl` builds its
Verilog from them), so neither reads a setting from the spec its own way.

The scheduler and the row policy are picked by name in the config (`system.scheduler`, `row_buf_policy`) and the
Python engine implements them in `memsim.scheduling`. `ENGINE_SCHEDULERS` and `ENGINE_ROW_POLICIES` are the ones the
C++ engine and the RTL implement (every one the Python engine offers; a test checks that), with what each is to
them: the FCFS flag (K_FCFS, the RTL's `FCFS` parameter) and the column commands (`memsim.scheduling.ROW_POLICIES`,
the Python controller's own rule). Any other name is refused by `unsupported_scheduling`, in one line: trace runs
then leave the part to the Python engine, the RTL and the native engine refuse it.

The RTL's tables are derived from the same object on first use (the C++ engine never asks for them): widths from
the organisation, and per-command latencies from `memsim.timing_table.compile_offsets`, collapsed to the four
relations a bank can have to the bank a command went to (same bank, same bank group, other bank group of its
rank, other rank). Each timing counter is as wide as the longest latency that can load it.
"""

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from memsim.address_mapping import AddressMapping, build_address_mapping
from memsim.commands import Cmd
from memsim.errors import MemsimError
from memsim.scheduling import ROW_HIT_CAP, ROW_POLICIES, FcfsScheduler, FrFcfsScheduler
from memsim.spec import DramSpec
from memsim.timing_table import NEVER, build_constraints, build_windows, compile_offsets

# scheduler name -> FCFS flag: strict order (FcfsScheduler), else first ready (FrFcfsScheduler)
ENGINE_SCHEDULERS = {FrFcfsScheduler.name: False, FcfsScheduler.name: True}
ENGINE_ROW_POLICIES = ("OPEN_PAGE", "CLOSE_PAGE")  # their column commands: ROW_POLICIES[name].column_command

# relation of a bank to the bank a command was issued to
SAME_BANK, SAME_BANKGROUP, OTHER_BANKGROUP, OTHER_RANK = 0, 1, 2, 3
RELATIONS = ("same bank", "same bank group", "other bank group", "other rank")
ISSUED = (Cmd.READ, Cmd.WRITE, Cmd.READ_PRECHARGE, Cmd.WRITE_PRECHARGE, Cmd.ACTIVATE, Cmd.PRECHARGE, Cmd.REFRESH,
          Cmd.REFRESH_BANK)  # fmt: skip


def bits_for(n: int) -> int:
    """Bits to hold the values 0..n (at least one)."""
    return max(1, int(n).bit_length())


def log2(n: int) -> int:
    return n.bit_length() - 1


def unsupported_scheduling(spec: DramSpec) -> str | None:
    """The scheduler or row policy of `spec` that the C++ engine and the RTL do not implement, or None."""
    if spec.scheduler not in ENGINE_SCHEDULERS:
        return f"scheduler = {spec.scheduler} (the C++ engine and the RTL implement {', '.join(ENGINE_SCHEDULERS)})"
    if spec.row_buf_policy not in ENGINE_ROW_POLICIES or spec.row_buf_policy not in ROW_POLICIES:
        return (f"row_buf_policy = {spec.row_buf_policy} (the C++ engine and the RTL implement "
                f"{', '.join(ENGINE_ROW_POLICIES)})")  # fmt: skip
    return None


@dataclass(frozen=True)
class ChannelParams:
    """A channel's constants: controller settings, organisation, widths and (for the RTL) latencies."""

    spec: DramSpec

    def __post_init__(self) -> None:
        missing = unsupported_scheduling(self.spec)
        if missing is not None:
            raise MemsimError(f"config {self.spec.name}: {missing}; simulate it with memsim's Python engine")

    @property
    def fcfs(self) -> bool:
        """The scheduler: FCFS, else frfcfs (`ENGINE_SCHEDULERS`)."""
        return ENGINE_SCHEDULERS[self.spec.scheduler]

    @property
    def row_hit_cap(self) -> int:
        """frfcfs's hit cap (`memsim.scheduling.ROW_HIT_CAP`, which the C++ engine's header also takes)."""
        return ROW_HIT_CAP

    @property
    def hit_bits(self) -> int:
        """Width of a bank's hit counter (it counts up to the cap)."""
        return bits_for(self.row_hit_cap)

    @property
    def read_column(self) -> int:
        """The column command a read becomes under the row policy (RD, or RDA for CLOSE_PAGE)."""
        return int(ROW_POLICIES[self.spec.row_buf_policy].column_command(False))

    @property
    def write_column(self) -> int:
        return int(ROW_POLICIES[self.spec.row_buf_policy].column_command(True))

    @cached_property
    def mapping(self) -> AddressMapping:
        return build_address_mapping(self.spec)

    @cached_property
    def windows(self) -> tuple[tuple[int, int], ...]:
        """(count, window cycles) per rolling activation window."""
        return tuple((w.count, w.window) for w in build_windows(self.spec))

    @cached_property
    def following(self) -> tuple[int, ...]:
        """The commands the RTL's controller checks, one timing counter per bank for each."""
        refresh = Cmd.REFRESH_BANK if self.spec.refresh_policy == "BANK_LEVEL_STAGGERED" else Cmd.REFRESH
        return (self.read_column, self.write_column, int(Cmd.ACTIVATE), int(Cmd.PRECHARGE), int(refresh))

    @cached_property
    def latency(self) -> dict[int, dict[int, dict[int, int]]]:
        """latency[cmd][relation][following]: cycles `following` must wait after `cmd` (0: no constraint); a part
        whose banks in one relation need different latencies is refused (the RTL keeps one per relation)."""
        return _latency_table(self.spec, self.following)

    @property
    def ranks(self) -> int:
        return self.spec.ranks

    @property
    def banks_per_rank(self) -> int:
        return self.spec.banks

    @property
    def n_banks(self) -> int:
        return self.spec.ranks * self.spec.banks

    @property
    def field_bits(self) -> dict[str, int]:
        return dict(self.mapping.widths)

    @property
    def local_bits(self) -> int:
        """Bits of an address inside one channel: rank, bank group, bank, row, column and the offset in the
        request (kept, as memsim keeps a request's address: two addresses in one line are two requests)."""
        w = self.mapping.widths
        return w["ra"] + w["bg"] + w["ba"] + w["ro"] + w["co"] + self.mapping.shift_bits

    @property
    def data_bits(self) -> int:
        return self.spec.request_size_bytes * 8

    @property
    def write_capacity(self) -> int:
        spec = self.spec
        return spec.write_buf_size if spec.mode == "jedec" and spec.write_buf_size else spec.trans_queue_size

    @property
    def read_delay(self) -> int:
        return self.spec.t("read_delay")

    @property
    def slots(self) -> int:
        """Write-data slots: every write that can be pending (buffer, command queues, store pipeline)."""
        return self.write_capacity + self.n_banks * self.spec.cmd_queue_size + self.read_delay

    @property
    def refresh_interval(self) -> int:
        spec = self.spec
        if spec.refresh_policy == "RANK_LEVEL_SIMULTANEOUS":
            return spec.t("tREFI")
        if spec.refresh_policy == "BANK_LEVEL_STAGGERED":
            return spec.t("tREFIb")
        return spec.t("tREFI") // spec.ranks

    @property
    def refresh_all_ranks(self) -> bool:
        """jedec mode refreshes every rank at once under RANK_LEVEL_SIMULTANEOUS; DRAMSim3 the first only."""
        return self.spec.refresh_policy == "RANK_LEVEL_SIMULTANEOUS" and self.spec.mode == "jedec"

    @property
    def refresh_period(self) -> int:
        """Length of the refresh rotation (ranks, or banks for per-bank refresh)."""
        if self.spec.refresh_policy == "BANK_LEVEL_STAGGERED":
            return self.n_banks
        return self.ranks

    def counter_bits(self, following: int) -> int:
        most = max((lat for rel in self.latency.values() for fol in rel.values() for f, lat in fol.items()
                    if f == following), default=0)  # fmt: skip
        return bits_for(max(most - 1, 1))


def _relation_pairs(spec: DramSpec) -> dict[int, list[tuple[int, int]]]:
    n = spec.ranks * spec.banks
    pairs: dict[int, list[tuple[int, int]]] = {r: [] for r in range(4)}
    for s in range(n):
        for d in range(n):
            if s // spec.banks != d // spec.banks:
                pairs[OTHER_RANK].append((s, d))
            elif s // spec.banks_per_group != d // spec.banks_per_group:
                pairs[OTHER_BANKGROUP].append((s, d))
            elif s != d:
                pairs[SAME_BANKGROUP].append((s, d))
            else:
                pairs[SAME_BANK].append((s, d))
    return pairs


def _latency_table(spec: DramSpec, following: tuple[int, ...]) -> dict[int, dict[int, dict[int, int]]]:
    offsets = compile_offsets(spec, build_constraints(spec))  # [cmd, src bank, dst bank * N_CMD + following]
    n_cmd = offsets.shape[2] // offsets.shape[1]
    table = offsets.reshape(offsets.shape[0], offsets.shape[1], offsets.shape[1], n_cmd)
    latency: dict[int, dict[int, dict[int, int]]] = {}
    for cmd in ISSUED:
        latency[int(cmd)] = {}
        for rel, pairs in _relation_pairs(spec).items():
            latency[int(cmd)][rel] = {}
            if not pairs:
                continue
            src, dst = np.array(pairs).T
            for f in following:
                # REF is issued to the rank's first bank, and its rules cover the whole rank: look from there
                values = table[cmd, src, dst, f]
                if cmd == Cmd.REFRESH:
                    first = src % spec.banks == 0
                    values = values[first]
                    if len(values) == 0:
                        continue
                if len(set(values.tolist())) != 1:
                    raise MemsimError(f"config {spec.name}: {Cmd(cmd).name} -> {Cmd(f).name} has different latencies "
                                      f"for banks in the relation '{RELATIONS[rel]}'; the RTL needs one")  # fmt: skip
                lat = int(values[0])
                latency[int(cmd)][rel][int(f)] = max(lat, 0) if lat != NEVER else 0
    return latency
