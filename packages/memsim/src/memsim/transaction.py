"""A memory request as the controller sees it."""

from collections.abc import Callable
from typing import Any


class Transaction:
    """One read or write of `request_size_bytes` at `addr`; `data` carries the bytes (None: timing only)."""

    __slots__ = ("added_cycle", "addr", "callback", "complete_cycle", "data", "is_write", "tag", "where")

    def __init__(self, addr: int, is_write: bool, data: bytes | None = None,
                 callback: "Callable[[Transaction], Any] | None" = None, tag: Any = None) -> None:  # fmt: skip
        self.addr = addr
        self.is_write = is_write
        self.data = data
        self.callback = callback
        self.tag = tag
        self.added_cycle = -1
        self.complete_cycle = -1
        self.where: tuple[int, int, int, int, int, int] | None = None  # decoded (rank, bg, bank, flat bank, row, col)

    @property
    def latency(self) -> int:
        """Cycles from acceptance into the transaction queue to completion (DRAMSim3's read latency)."""
        return self.complete_cycle - self.added_cycle

    def __repr__(self) -> str:
        kind = "WRITE" if self.is_write else "READ"
        return f"Transaction({kind} {self.addr:#x}, added={self.added_cycle}, done={self.complete_cycle})"
