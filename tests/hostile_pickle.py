"""A pickle that would run code when loaded: the tests of the restricted unpicklers (zaya-config's
`safe_pickle`, ckpt-reshape's readers, zaya-train's resume) check it is refused before anything runs."""

import os
import pickle
from pathlib import Path


class MakesADir:
    """Unpickling this calls `os.mkdir(target)`: what a hostile checkpoint would do. Check `target` afterwards."""

    def __init__(self, target: Path) -> None:
        self.target = target

    def __reduce__(self):
        return (os.mkdir, (str(self.target),))


def hostile_pickle(target: Path, protocol: int = pickle.DEFAULT_PROTOCOL) -> bytes:
    """Pickle bytes whose loading would create the folder `target`."""
    return pickle.dumps(MakesADir(target), protocol=protocol)
