"""Optional compiled engine (numba) for trace-driven runs; the pure-Python engine stays the reference.

`TraceFrontend.run(engine="auto")` uses it when numba is installed (`pip install memsim[fast]`) and the
run starts from a fresh system; `engine="python"` or `MEMSIM_ENGINE=python` forces the Python engine.
"""

import importlib.util


def available() -> bool:
    """Whether numba can be imported (checked without importing it)."""
    return importlib.util.find_spec("numba") is not None
