"""DRAM command types as small integers (they index the timing arrays) and their names."""

from enum import IntEnum


class Cmd(IntEnum):
    READ = 0
    WRITE = 1
    READ_PRECHARGE = 2
    WRITE_PRECHARGE = 3
    ACTIVATE = 4
    PRECHARGE = 5
    REFRESH = 6
    REFRESH_BANK = 7
    SREF_ENTER = 8
    SREF_EXIT = 9
    PD_ENTER = 10  # precharge power-down entry (CKE low with every bank closed)
    PD_EXIT = 11
    REFRESH_SAME_BANK = 12  # DDR5 REFsb: bank index b of every bank group of a rank
    RFM = 13  # DDR5 refresh management, all banks of a rank (RFMab)


N_CMD = len(Cmd)
READS = frozenset((Cmd.READ, Cmd.READ_PRECHARGE))
WRITES = frozenset((Cmd.WRITE, Cmd.WRITE_PRECHARGE))
COLUMN_CMDS = READS | WRITES
RANK_CMDS = frozenset((Cmd.REFRESH, Cmd.SREF_ENTER, Cmd.SREF_EXIT, Cmd.PD_ENTER, Cmd.PD_EXIT, Cmd.RFM))
POWER_CMDS = frozenset((Cmd.SREF_ENTER, Cmd.SREF_EXIT, Cmd.PD_ENTER, Cmd.PD_EXIT))
SHORT_NAMES = {
    Cmd.READ: "RD", Cmd.WRITE: "WR", Cmd.READ_PRECHARGE: "RDA", Cmd.WRITE_PRECHARGE: "WRA", Cmd.ACTIVATE: "ACT",
    Cmd.PRECHARGE: "PRE", Cmd.REFRESH: "REF", Cmd.REFRESH_BANK: "REFB", Cmd.SREF_ENTER: "SREFE", Cmd.SREF_EXIT: "SREFX",
    Cmd.PD_ENTER: "PDE", Cmd.PD_EXIT: "PDX", Cmd.REFRESH_SAME_BANK: "REFsb", Cmd.RFM: "RFM",
}  # fmt: skip
