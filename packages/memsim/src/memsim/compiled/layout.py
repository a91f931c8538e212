"""Where each piece of controller state lives in the compiled engine's flat integer arrays.

The compiled engine (memsim's C++ engine, `memsim/cosim/native/memsim_engine.cc`, which reads these constants
from the header `memsim.cosim.native_build` generates from this module) keeps everything the Python controller
keeps in a few int64 arrays, which Python allocates and reads back (`memsim.compiled.bridge`):

- `K`: configuration, activation windows, the sparse timing offsets, and the offset of each segment
  of a channel's row in `CH`;
- `CH[channel]`: one controller: scalars (`S_*`), earliest-issue table, bank state, activation
  windows, command queues, transaction queues; pending refreshes are a window (head, length) of the
  refresh rotation (`memsim.refresh.RefreshSchedule.entry`);
- `TR[entry]`: the decoded trace and each transaction's cycles; `AD[address id]`: pending reads and
  writes per distinct address; `LOGT` / `LOGC`: the logs the statistics are computed from.

`ChannelLayout` computes the segment offsets and gives numpy views of them, for the bridge.
"""

from dataclasses import dataclass

import numpy as np

# frfcfs's hit cap has its home in memsim.scheduling; the C++ engine's header takes it from here
from memsim.scheduling import ROW_HIT_CAP as ROW_HIT_CAP

# commands (memsim.commands.Cmd)
RD, WR, RDA, WRA, ACT, PRE, REF, REFB, SRE, SRX, PDE, PDX, REFSB, RFM = range(14)  # memsim.commands.Cmd
N_CMD = 14
CLOSED, OPEN, SREF = 0, 1, 2
NEVER = 1 << 62
# the version of the native config file (memsim.cosim.native_config) that carries K: bump it when K changes
NATIVE_CONFIG_VERSION = 2  # 2: the K array of memsim 18 (write buffer, modes, refresh rotation)

# K: configuration, then segment offsets into a CH row, then windows and the offset table
(K_NB, K_BPR, K_RANKS, K_NQ, K_PER_BANK, K_CQ, K_TQ, K_UNIFIED, K_DUAL, K_FCFS, K_RD_CMD, K_WR_CMD, K_READ_DELAY,
 K_WRITE_DELAY, K_DRAIN, K_REF_POLICY, K_REF_INTERVAL, K_BG, K_BPG, K_NCH, K_NW, K_WCAP, K_JEDEC, K_WBCAP,
 O_E, O_BSTATE, O_OPEN_ROW, O_ROW_HITS, O_OPENR, O_ACTW_LEN, O_ACTW, O_QLEN, O_BOUND, O_RQ, O_WB, O_Q,
 O_WIN, O_OFF_START, O_OFF_IDX, O_OFF_LAT, K_ALL_RANKS) = range(41)  # fmt: skip
K_HEADER = 41
REF_STAGGERED, REF_SIMULTANEOUS, REF_PER_BANK = 0, 1, 2

# CH[ch, 0:S_SIZE]: per-channel scalars
(S_NEXT_WAKE, S_LAST_ARRIVAL, S_WRITE_DRAINING, S_DIRTY, S_QUEUE_IDX, S_COUNT, S_IN_REFRESH, S_SKIP_LO, S_SKIP_HI,
 S_NEXT_DUE, S_RFQ_HEAD, S_RFQ_LEN, S_RQ_LEN, S_WB_LEN, S_CMD_LEN, S_COMP_LEN,
 S_IA_LEN, S_WL_LEN, S_DUAL_LEN, S_PWR_LEN, S_POWER_DIRTY, S_ONDEMAND) = range(22)  # fmt: skip
S_SIZE = 22

# fields of a queued command (aid = index of its address among the trace's distinct addresses)
QF_CMD, QF_AID, QF_RANK, QF_BANK, QF_ROW, QF_COL = range(6)
QF_SIZE = 6

# TR columns: the decoded trace entry, then its transaction's cycles and its successor among merged reads
T_AID, T_WRITE, T_CYCLE, T_CH, T_RANK, T_BANK, T_ROW, T_COL, T_ADDED, T_COMPLETE, T_NEXT = range(11)
T_SIZE = 11

# AD columns: the oldest and newest pending read of an address, and its buffered write (-1: none)
A_PR_HEAD, A_PR_TAIL, A_PW = range(3)

# LOGT[ch, i]: completions (cycle, latency, is_write), interarrival, write latency, each with its own length
L_COMP_CYCLE, L_COMP_LAT, L_COMP_WRITE, L_IA, L_WL = range(5)
# LOGC[ch, i]: command (cycle, cmd, rank, bank, row, column, hit), dual-issue cycle, power run (cycle, idle...)
C_CYCLE, C_CMD, C_RANK, C_BANK, C_ROW, C_COL, C_HIT, C_DUAL, C_PWR = range(9)

# G: the trace frontend's cursor
G_INDEX, G_N, G_ONE_SHOT = range(3)


@dataclass(frozen=True)
class ChannelLayout:
    """Sizes of one channel's segments and their offsets in a CH row."""

    n_banks: int
    ranks: int
    n_queues: int
    cmd_queue: int
    trans_queue: int
    write_buffer: int
    n_windows: int
    window_cap: int

    @property
    def sizes(self) -> dict[int, tuple[int, ...]]:
        nb, r = self.n_banks, self.ranks
        return {
            O_E: (nb * N_CMD,), O_BSTATE: (nb,), O_OPEN_ROW: (nb,), O_ROW_HITS: (nb,), O_OPENR: (r,),
            O_ACTW_LEN: (r, self.n_windows), O_ACTW: (r, self.n_windows, self.window_cap),
            O_QLEN: (self.n_queues,), O_BOUND: (self.n_queues,), O_RQ: (self.trans_queue,),
            O_WB: (self.write_buffer,), O_Q: (self.n_queues, self.cmd_queue, QF_SIZE),
        }  # fmt: skip

    def offsets(self) -> tuple[dict[int, int], int]:
        """Segment -> offset, and the row length."""
        out, pos = {}, S_SIZE
        for key, shape in self.sizes.items():
            out[key] = pos
            pos += int(np.prod(shape))
        return out, pos

    def view(self, row: np.ndarray, key: int) -> np.ndarray:
        """Writable view of one segment of a CH row, in its natural shape."""
        offsets, _ = self.offsets()
        shape = self.sizes[key]
        return row[offsets[key] : offsets[key] + int(np.prod(shape))].reshape(shape)
