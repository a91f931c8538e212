"""Functional memory: the bytes behind the timing model, stored sparsely (one entry per written request)."""

from memsim.errors import MemsimError


class BackingStore:
    """Request-sized lines keyed by address; unwritten memory reads as zeros."""

    def __init__(self, line_bytes: int) -> None:
        self.line_bytes = line_bytes
        self._lines: dict[int, bytes] = {}
        self._zeros = bytes(line_bytes)

    def read(self, addr: int) -> bytes:
        return self._lines.get(addr, self._zeros)

    def write(self, addr: int, data: bytes) -> None:
        if len(data) != self.line_bytes:
            raise MemsimError(f"write of {len(data)} bytes at {addr:#x}; a request carries {self.line_bytes} bytes")
        self._lines[addr] = bytes(data)

    def __len__(self) -> int:
        return len(self._lines)
