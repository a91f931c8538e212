"""The compiled engine for trace-driven runs: memsim's C++ engine (`memsim.cosim.native`, built with the system's
compiler on first use), driven through ctypes; the pure-Python engine stays the reference.

`layout` is where each piece of controller state lives in the flat arrays both sides share, `library` loads the
C++ library, `bridge` runs a `TraceFrontend` on it. `TraceFrontend.run(engine="auto")` uses it when the library
can be built and the run starts from a fresh system; `engine="python"` or `MEMSIM_ENGINE=python` forces the
Python engine.
"""


def available() -> bool:
    """Whether the C++ engine can run here (its library loads, built on first use)."""
    from memsim.compiled.library import why_unavailable

    return why_unavailable() is None
