"""The one restricted unpickler of the monorepo: a pickle from disk is data, never code.

A plain `pickle.load` runs any callable a file names (`os.system`, ...), so a checkpoint copied from
elsewhere could run code on load. Every pickle we read (a rank's train state, DCP's `.metadata`) goes through
`load_restricted`, which resolves only the globals its `allow` function returns and refuses the rest with
one line naming the file, the global and what the file was expected to hold. Stdlib only: the allow-lists
(`zaya_config.train_checkpoint.train_state`, `.dcp_metadata`) import numpy or torch when a file names them.
"""

from __future__ import annotations

import io
import pickle
from collections.abc import Callable
from pathlib import Path
from typing import IO

# (module, name) -> the object to use for it, or None when the global is not allowed
AllowGlobal = Callable[[str, str], object | None]


class UnsafePickleError(ValueError):
    """A pickle names a global outside its allow-list (or does not unpickle); the message names file and fix."""


class _RestrictedUnpickler(pickle.Unpickler):
    def __init__(self, stream: IO[bytes], allow: AllowGlobal, source: str, holds: str) -> None:
        super().__init__(stream)
        self.allow, self.source, self.holds = allow, source, holds

    def find_class(self, module: str, name: str) -> object:
        found = self.allow(module, name)
        if found is None:
            raise UnsafePickleError(
                f"{self.source}: references {module}.{name}, which is not unpickled here (a checkpoint is data, "
                f"never code: {self.holds} only); this file was not written by zaya-train, check where it came from"
            )
        return found


def load_restricted(data: bytes | IO[bytes], allow: AllowGlobal, source: str | Path, holds: str) -> object:
    """Unpickle `data` resolving only the globals `allow` returns; `holds` says what the file may contain."""
    stream = io.BytesIO(data) if isinstance(data, bytes | bytearray) else data
    try:
        return _RestrictedUnpickler(stream, allow, str(source), holds).load()
    except UnsafePickleError:
        raise
    except Exception as err:
        raise UnsafePickleError(
            f"{source}: does not unpickle ({type(err).__name__}: {err}); truncated or corrupt"
        ) from err
