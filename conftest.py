"""Workspace-wide pytest setup: one compute thread per test process, GPU tests skip without a GPU, exhaustive
tests (full-size checks whose results BENCHMARKS.md records) run only with ZAYA_EXHAUSTIVE=1."""

import os
import sys

# pytest-xdist runs one process per core; more threads per process only oversubscribes the CPU.
for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ.setdefault(var, "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("MPLBACKEND", "Agg")
# Cache compiled bytecode, as Python does by default: this machine's environment sets PYTHONDONTWRITEBYTECODE=1,
# and then every process the tests start compiles the workspace's sources again, and each xdist worker rewrites
# every test module's asserts again (~4 s of collection per worker). __pycache__ is git-ignored and left out of
# every content hash (tests/artifact_cache.py).
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
sys.dont_write_bytecode = False

import pytest  # noqa: E402
from slow_first import load_durations, slowest_first  # noqa: E402  (tests/ is on pytest's pythonpath)

pytest_plugins = ["cpu_census"]  # the machine's CPU over the run; each test's with ZAYA_CPU_CENSUS=FILE


def _has_gpu() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


def _skip_marked(items: list[pytest.Item], marker: str, reason: str) -> None:
    skip = pytest.mark.skip(reason=reason)
    for item in items:
        if item.get_closest_marker(marker):
            item.add_marker(skip)


def pytest_configure(config: pytest.Config) -> None:
    """Hand tests to the xdist workers one at a time (`--maxschedchunk=1`) unless the command line says
    otherwise. By default xdist's load scheduler first deals each worker a block of a quarter of its share
    (~300 tests here) in collection order; with the slowest tests sorted first, one worker's first block held
    every slow test and ran them in series while the other worker stood idle (24 min 30 s at af42607)."""
    if getattr(config.option, "maxschedchunk", "absent") is None:
        config.option.maxschedchunk = 1


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Skip `gpu`-marked tests cleanly on machines without CUDA (CI never has one), and `exhaustive` ones unless
    ZAYA_EXHAUSTIVE=1 (they would take CI past its 30 minutes on 2 cores); put the slowest tests first
    (tests/slow_first.py)."""
    slow = [item.get_closest_marker("slow") is not None for item in items]
    order = slowest_first([item.nodeid for item in items], load_durations(), slow)
    items[:] = [items[i] for i in order]
    if any(item.get_closest_marker("gpu") for item in items) and not _has_gpu():
        _skip_marked(items, "gpu", "needs a CUDA GPU")
    if os.environ.get("ZAYA_EXHAUSTIVE") != "1":
        _skip_marked(
            items, "exhaustive", "exhaustive: run with ZAYA_EXHAUSTIVE=1 (results in the package's BENCHMARKS.md)"
        )
