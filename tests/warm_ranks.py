"""Run a test's worker script on N local ranks forked from a warm process, as torchrun would start them.

Many distributed tests launch a worker script of their own under `python -m torch.distributed.run`: an agent
process and N ranks, each a fresh interpreter importing torch again (~2 CPU-s each on the 2-core machine, before
any work). What those tests check is the training under a real process group, not torchrun: torchrun itself is
tested where its behaviour matters (the services' torchrun runs, the restart and fault-tolerance tests). Here
the ranks fork from multiprocessing's forkserver, which imported torch once per test process, and get the
environment torchrun gives its ranks (RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, MASTER_ADDR,
MASTER_PORT); the script then runs as `__main__` with its arguments, joins a real gloo group through env://
and exits. As torchrun does, the first rank to fail stops the others.

    done = run_ranks(WORKER, ["--jobs", str(spec)], nproc=2)
    assert done.returncode == 0, done.stderr[-3000:]
"""

from __future__ import annotations

import multiprocessing
import os
import resource
import runpy
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# Imported once by the forkserver (a module that is not installed is skipped): what every rank would import.
# Nothing here reads the environment at import in a way the tests change later (a rank sets its environment
# before its script runs), and none of it starts a thread, so the fork is as clean as a fresh interpreter.
# CPU seconds the ranks of every run_ranks call of this process used (the census adds them to the test's own:
# the forked ranks are the forkserver's children, not this process's, so getrusage here does not see them).
RANKS_CPU_SECONDS = 0.0
PRELOAD = ["torch", "torch.distributed", "torch.distributed.checkpoint", "zaya_model", "zaya_train.build"]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _rank(script: str, argv: list[str], env: dict[str, str], cwd: str | None, out: str, err: str) -> None:
    """One rank, in the forked child: its output to files, torchrun's environment, the script as __main__."""
    for fd, path in ((1, out), (2, err)):
        target = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(target, fd)
        os.close(target)
    os.environ.clear()
    os.environ.update(env)
    if cwd:
        os.chdir(cwd)
    import torch

    torch.set_num_threads(int(env.get("OMP_NUM_THREADS", "1")))
    sys.argv = [script, *argv]
    sys.path.insert(0, str(Path(script).parent))  # as `python script.py` puts the script's folder first
    try:
        runpy.run_path(script, run_name="__main__")
    finally:  # a forked child's counters start at zero: this is the rank's own CPU and its children's
        used = sum(
            u.ru_utime + u.ru_stime for u in map(resource.getrusage, (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))
        )
        Path(err).with_suffix(".cpu").write_text(f"{used}")


def run_ranks(
    script: Path | str,
    argv: list[str],
    nproc: int,
    *,
    env: dict[str, str] | None = None,
    cwd: Path | str | None = None,
    timeout: float = 600,
) -> subprocess.CompletedProcess:
    """Run `script argv` on `nproc` ranks and wait; the result holds the exit code (the first failing rank's, or
    -9 for a timeout) and every rank's stdout and stderr, rank 0 first, as one CompletedProcess."""
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(PRELOAD)
    base = {**os.environ, **(env or {})}
    port = str(_free_port())
    with tempfile.TemporaryDirectory(prefix="warm-ranks-") as tmp:
        logs = [(os.path.join(tmp, f"{r}.out"), os.path.join(tmp, f"{r}.err")) for r in range(nproc)]
        procs = []
        for rank in range(nproc):
            rank_env = {**base, "RANK": str(rank), "LOCAL_RANK": str(rank), "GROUP_RANK": "0",
                        "WORLD_SIZE": str(nproc), "LOCAL_WORLD_SIZE": str(nproc),
                        "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": port}  # fmt: skip
            proc = ctx.Process(target=_rank, args=(str(script), list(argv), rank_env, cwd and str(cwd), *logs[rank]))
            proc.start()
            procs.append(proc)
        code = _wait(procs, timeout)
        global RANKS_CPU_SECONDS
        RANKS_CPU_SECONDS += sum(float(p.read_text()) for p in Path(tmp).glob("*.cpu"))
        out = "".join(Path(o).read_text(errors="replace") for o, _ in logs)
        err = "".join(Path(e).read_text(errors="replace") for _, e in logs)
    return subprocess.CompletedProcess([str(script), *argv], code, out, err)


def _wait(procs: list, timeout: float) -> int:
    """0 once every rank exits cleanly; else the first failure's code, after stopping the ranks still running."""
    deadline = time.monotonic() + timeout
    code = 0
    while any(p.is_alive() for p in procs):
        failed = [p.exitcode for p in procs if p.exitcode not in (None, 0)]
        if failed or time.monotonic() > deadline:
            code = failed[0] if failed else -signal.SIGKILL
            break
        time.sleep(0.05)
    for p in procs:
        if p.is_alive():
            p.kill()
        p.join()
    return code or next((p.exitcode for p in procs if p.exitcode), 0)
