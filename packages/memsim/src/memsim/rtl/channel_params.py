"""Everything the generated RTL of one channel is built from, derived from memsim's own spec and timing table.

Widths come from the organisation (ranks, bank groups, banks, rows, columns, queue sizes); the per-command
latencies come from `memsim.timing_table.compile_offsets`, collapsed to the four relations a bank can have to
the bank a command went to (same bank, same bank group, other bank group of its rank, other rank). Each
timing counter is as wide as the longest latency that can load it.
"""

from dataclasses import dataclass

import numpy as np

from memsim.address_mapping import FIELDS, AddressMapping, build_address_mapping
from memsim.commands import Cmd
from memsim.errors import MemsimError
from memsim.spec import DramSpec
from memsim.timing_table import NEVER, build_constraints, build_windows, compile_offsets

# relation of a bank to the bank a command was issued to
SAME_BANK, SAME_BANKGROUP, OTHER_BANKGROUP, OTHER_RANK = 0, 1, 2, 3
RELATIONS = ("same bank", "same bank group", "other bank group", "other rank")
ISSUED = (Cmd.READ, Cmd.WRITE, Cmd.READ_PRECHARGE, Cmd.WRITE_PRECHARGE, Cmd.ACTIVATE, Cmd.PRECHARGE, Cmd.REFRESH,
          Cmd.REFRESH_BANK)  # fmt: skip
REFRESH_POLICIES = ("RANK_LEVEL_STAGGERED", "RANK_LEVEL_SIMULTANEOUS", "BANK_LEVEL_STAGGERED")


def bits_for(n: int) -> int:
    """Bits to hold the values 0..n (at least one)."""
    return max(1, int(n).bit_length())


def log2(n: int) -> int:
    return n.bit_length() - 1


def unsupported_by_rtl(spec: DramSpec) -> str | None:
    """What of `spec` the RTL does not model (generation refuses it by name), or None."""
    from memsim.compiled.bridge import unsupported

    missing = unsupported(spec)
    if missing is not None:
        return missing
    if spec.queue_structure != "PER_BANK":
        return f"queue_structure = {spec.queue_structure} (the RTL has per-bank command queues only)"
    if spec.unified_queue:
        return "unified_queue (the RTL has a read queue and a write buffer)"
    if spec.refresh_policy not in REFRESH_POLICIES:
        return f"refresh_policy = {spec.refresh_policy}"
    return None


@dataclass(frozen=True)
class ChannelParams:
    """The generated channel's constants: organisation, widths, latencies and controller settings."""

    spec: DramSpec
    mapping: AddressMapping
    # latency[cmd][relation][following]: cycles `following` must wait after `cmd` (0: no constraint)
    latency: dict[int, dict[int, dict[int, int]]]
    windows: tuple[tuple[int, int], ...]  # (count, window cycles) per rolling activation window
    following: tuple[int, ...]  # the commands the controller checks, one timing counter per bank for each

    @property
    def ranks(self) -> int:
        return self.spec.ranks

    @property
    def fcfs(self) -> bool:
        """The scheduler: FCFS, else frfcfs (the only two memsim offers, `memsim.scheduling`)."""
        return self.spec.scheduler == "fcfs"

    @property
    def row_hit_cap(self) -> int:
        """frfcfs's hit cap (`memsim.scheduling.ROW_HIT_CAP`, which the C++ engine's header also takes)."""
        from memsim.scheduling import ROW_HIT_CAP

        return ROW_HIT_CAP

    @property
    def hit_bits(self) -> int:
        """Width of a bank's hit counter (it counts up to the cap)."""
        return bits_for(self.row_hit_cap)

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
    def read_column(self) -> int:
        return int(Cmd.READ_PRECHARGE if self.spec.row_buf_policy == "CLOSE_PAGE" else Cmd.READ)

    @property
    def write_column(self) -> int:
        return int(Cmd.WRITE_PRECHARGE if self.spec.row_buf_policy == "CLOSE_PAGE" else Cmd.WRITE)

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


def channel_params(spec: DramSpec) -> ChannelParams:
    """Derive the RTL's constants from `spec`; refuse what the RTL does not model, by name."""
    missing = unsupported_by_rtl(spec)
    if missing is not None:
        raise MemsimError(f"config {spec.name}: the RTL does not model {missing}; simulate it with memsim's Python "
                          "engine (zaya memsim run)")  # fmt: skip
    offsets = compile_offsets(spec, build_constraints(spec))  # [cmd, src bank, dst bank * N_CMD + following]
    n_cmd = offsets.shape[2] // offsets.shape[1]
    table = offsets.reshape(offsets.shape[0], offsets.shape[1], offsets.shape[1], n_cmd)
    refresh = Cmd.REFRESH_BANK if spec.refresh_policy == "BANK_LEVEL_STAGGERED" else Cmd.REFRESH
    columns = (Cmd.READ_PRECHARGE, Cmd.WRITE_PRECHARGE) if spec.row_buf_policy == "CLOSE_PAGE" else (Cmd.READ,
                                                                                                    Cmd.WRITE)  # fmt: skip
    following = (*columns, Cmd.ACTIVATE, Cmd.PRECHARGE, refresh)
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
    windows = tuple((w.count, w.window) for w in build_windows(spec))
    return ChannelParams(spec, build_address_mapping(spec), latency, windows, tuple(int(f) for f in following))


__all__ = ["FIELDS", "ChannelParams", "bits_for", "channel_params", "log2", "unsupported_by_rtl"]
