"""Read-only file descriptors a checkpoint reader shares between its I/O threads."""

from __future__ import annotations

import os
import threading
from pathlib import Path


class OpenFiles:
    """Each file under `root` opened once (thread-safe), read with pread by any thread, closed together."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._fds: dict[str, int] = {}
        self._lock = threading.Lock()

    def fd(self, relative_path: str) -> int:
        """The descriptor of `root/relative_path`, opening it on first use."""
        with self._lock:
            fd = self._fds.get(relative_path)
            if fd is None:
                fd = self._fds[relative_path] = os.open(self.root / relative_path, os.O_RDONLY)
            return fd

    def close(self) -> None:
        """Close every descriptor opened so far."""
        with self._lock:
            for fd in self._fds.values():
                os.close(fd)
            self._fds.clear()
