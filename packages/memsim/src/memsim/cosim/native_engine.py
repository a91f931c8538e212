"""memsim's native (C++) engine from Python, through its C interface: the same calls as `MemorySystem`'s
timing side (`will_accept`, `add_transaction`, `run_until`), completions as (tag, cycle) pairs, and the
issued-command log in `MemorySystem.issued_commands()`'s form, so tests can compare the two engines.
"""

import ctypes
import tempfile
from pathlib import Path

from memsim.compiled.library import load_library
from memsim.cosim.native_config import write_native_config
from memsim.errors import MemsimError
from memsim.spec import DramSpec

__all__ = ["NativeEngine", "load_library"]

_LL, _ULL = ctypes.c_longlong, ctypes.c_ulonglong


class NativeEngine:
    """One memsim part simulated by the C++ engine (timing only: no data, no stats)."""

    def __init__(self, spec: DramSpec | str | Path, build_dir: Path | None = None, log_commands: bool = False) -> None:
        self._lib = load_library(build_dir)
        with tempfile.TemporaryDirectory() as tmp:
            config = write_native_config(spec, Path(tmp) / "memsim.cfg")
            err = ctypes.create_string_buffer(512)
            self._handle = self._lib.memsim_engine_open(str(config).encode(), err, len(err))
        if not self._handle:
            raise MemsimError(err.value.decode())
        self._lib.memsim_engine_log_commands(self._handle, int(log_commands))

    def close(self) -> None:
        if self._handle:
            self._lib.memsim_engine_close(self._handle)
            self._handle = None

    def __del__(self) -> None:
        self.close()

    @property
    def clk(self) -> int:
        return self._lib.memsim_engine_clk(self._handle)

    def will_accept(self, addr: int, is_write: bool) -> bool:
        return bool(self._lib.memsim_engine_will_accept(self._handle, addr, int(is_write)))

    def add_transaction(self, addr: int, is_write: bool, tag: int) -> None:
        """Queue a request at the current cycle (check will_accept first)."""
        self._lib.memsim_engine_add(self._handle, addr, int(is_write), tag)

    def run_until(self, end: int) -> None:
        self._lib.memsim_engine_run_until(self._handle, end)

    def completions(self) -> list[tuple[int, int]]:
        """(tag, completion cycle) of the requests completed since the last call."""
        out: list[tuple[int, int]] = []
        tags, cycles = (_ULL * 1024)(), (_LL * 1024)()
        while n := self._lib.memsim_engine_completions(self._handle, tags, cycles, 1024):
            out += zip(tags[:n], cycles[:n], strict=True)
        return out

    def issued_commands(self) -> list[tuple[int, int, int, int, int, int, int, bool]]:
        """(cycle, channel, cmd, rank, bank, row, column, row_hit) per command, as MemorySystem's."""
        n = self._lib.memsim_engine_commands(self._handle, None, 0)
        buf = (_LL * (8 * n))()
        self._lib.memsim_engine_commands(self._handle, buf, n)
        rows = [tuple(buf[8 * i : 8 * i + 8]) for i in range(n)]
        out = [(*r[:7], bool(r[7])) for r in rows]
        out.sort(key=lambda c: c[0])
        return out
