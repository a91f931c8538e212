"""One torch.compile cache for every test process: inductor's FX-graph, AOTAutograd and C++ kernel caches under
`<artifact cache>/torchinductor/` (`.cache/tests/` or `$ZAYA_TEST_CACHE`) instead of the per-user
`/tmp/torchinductor_<user>`, so the xdist workers of a session and the subprocesses they start (benchmark
smokes, distributed workers) reuse each other's compilations, and a later session reuses them too. Inductor
names every entry by the hash of what it compiles (graph, torch version, inductor's sources, compiler and
flags), so a reused entry is the same compilation; an empty cache (CI) only compiles again.

Inductor also compiles in-process (`TORCHINDUCTOR_COMPILE_THREADS=1`): under `pytest -n auto` every core
already runs a test, and a pool of compile workers started per process would only add their start-up."""

from __future__ import annotations

import os
import sys

from artifact_cache import cache_root


def use_shared_inductor_cache() -> None:
    """Point this process's (and its children's) inductor caches at the shared folder; keep a folder or
    thread count the caller set."""
    folder = os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", str(cache_root() / "torchinductor"))
    os.environ.setdefault("TORCHINDUCTOR_COMPILE_THREADS", "1")
    config = sys.modules.get("torch._inductor.config")  # already imported: its thread count was read then
    if config is not None and os.environ["TORCHINDUCTOR_COMPILE_THREADS"] == "1":
        config.compile_threads = 1
    os.makedirs(folder, exist_ok=True)
