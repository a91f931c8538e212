"""Run a collective sweep on N local processes (gloo on CPU, NCCL on GPUs) and collect one result table.

The largest rank count is launched once; smaller counts run on sub-groups of its first ranks, so
several GPU counts come from one launch. Every rank times its own calls; rank 0 gathers them and
reports the average, fastest and slowest rank. A rank that dies or hangs does not hang the run: the
process group's timeout fails the collective on the others, and the parent stops every process at
`timeout_s` past the expected end with a message naming the rank.
"""

import datetime
import json
import os
import signal
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from collbench.config import CollectivesConfig
from collbench.errors import CollbenchError
from collbench.schema import BenchResult
from collbench.sizes import align_size, size_sweep


@dataclass(frozen=True)
class FaultDrill:
    """Make one rank fail on purpose to exercise the watchdog: `exit` dies at once, `hang` never answers."""

    rank: int
    mode: str = "exit"  # exit | hang


def resolve_backend(backend: str) -> str:
    """`auto` -> nccl with CUDA GPUs, gloo otherwise."""
    if backend != "auto":
        return backend
    import torch

    return "nccl" if torch.cuda.is_available() else "gloo"


def sweep_points(cfg: CollectivesConfig) -> list:
    """Every (collective, dtype, size, rank count, in-place) the sweep measures, in run order."""
    import torch

    from collbench.collectives import IN_PLACE_MODES, CollectivePoint, check_backend_collective

    backend = resolve_backend(cfg.backend)
    points = []
    for name in cfg.collectives:
        check_backend_collective(backend, name)
    sizes = size_sweep(cfg.min_bytes, cfg.max_bytes, cfg.step_factor, cfg.step_bytes)
    for n in sorted(set(cfg.rank_counts)):
        if n < 2:
            raise CollbenchError(f"rank count {n}: a collective needs at least 2 ranks; use rank_counts >= 2")
        for name in cfg.collectives:
            for dtype in cfg.dtypes:
                elem = torch.empty((), dtype=getattr(torch, dtype)).element_size()
                for size in dict.fromkeys(align_size(s, elem, n) for s in sizes):
                    for in_place in cfg.in_place:
                        if in_place in IN_PLACE_MODES[name]:
                            points.append(CollectivePoint(name, dtype, size, n, in_place))
    if not points:
        raise CollbenchError("the sweep is empty: no collective supports the requested in_place modes")
    return points


def _worker(
    rank: int, world: int, cfg_dict: dict, store_path: str, result_path: str, drill: FaultDrill | None, progress: bool
) -> None:
    import torch
    import torch.distributed as dist

    from collbench.collectives import CollectiveOp
    from collbench.timing import device_name, time_per_call_us

    cfg = CollectivesConfig(**cfg_dict)
    backend = resolve_backend(cfg.backend)
    if backend == "nccl":
        torch.cuda.set_device(rank % torch.cuda.device_count())
        device = torch.device("cuda", torch.cuda.current_device())
    else:
        device = torch.device("cpu")
    dist.init_process_group(
        backend,
        init_method=f"file://{store_path}",
        rank=rank,
        world_size=world,
        timeout=datetime.timedelta(seconds=cfg.timeout_s),
    )
    if drill is not None and drill.rank == rank:
        if drill.mode == "exit":
            os._exit(3)
        while True:
            time.sleep(3600)
    points = sweep_points(cfg)
    groups = {
        n: (dist.new_group(list(range(n))) if n < world else dist.group.WORLD)
        for n in sorted({p.n_ranks for p in points})
    }
    local: list[tuple] = []
    bar = None
    if progress and rank == 0:
        from tqdm import tqdm

        bar = tqdm(total=len(points), desc=f"collectives ({backend}, {world} ranks)", unit="pt", leave=False)
    for point in points:
        if rank < point.n_ranks:
            group = groups[point.n_ranks]
            op = CollectiveOp(point, rank, group, device)
            wrong = op.count_wrong() if cfg.check else -1
            call, _inp, _out = op.build(fill=False)
            t_us = time_per_call_us(
                call, cfg.iters, cfg.warmup_iters, device, barrier=lambda g=group: dist.barrier(group=g)
            )
            local.append((point.key, t_us, wrong))
        if bar is not None:
            bar.update()
    if bar is not None:
        bar.close()
    gathered: list | None = [None] * world if rank == 0 else None
    dist.gather_object((local, device_name(device)), gathered, dst=0)
    if rank == 0:
        assert gathered is not None
        rows = _combine(points, gathered, backend)
        Path(result_path).write_text(json.dumps([asdict(r) for r in rows]))
    dist.destroy_process_group()


def _combine(points: list, gathered: list, backend: str) -> list[BenchResult]:
    from collbench.collectives import element_count

    per_key: dict[tuple, list[tuple[float, int]]] = {}
    devices = sorted({dev for _local, dev in gathered})
    for local, _dev in gathered:
        for key, t_us, wrong in local:
            per_key.setdefault(key, []).append((t_us, wrong))
    rows = []
    for p in points:
        samples = per_key[p.key]
        wrongs = [w for _t, w in samples]
        rows.append(
            BenchResult.measured(
                p.collective,
                backend,
                p.dtype,
                p.size_bytes,
                element_count(p),
                p.n_ranks,
                [t for t, _w in samples],
                wrong=-1 if min(wrongs) < 0 else sum(wrongs),
                in_place=p.in_place,
                device=";".join(devices),
            )
        )
    return rows


def expected_runtime_s(cfg: CollectivesConfig) -> float:
    """A generous bound on a healthy run: start-up plus the process-group timeout."""
    return 60.0 + cfg.timeout_s


# The ranks fork from a server process that imported these once (multiprocessing's forkserver, preloaded),
# instead of each importing torch again as a spawned process does (~2 CPU-s a rank). The server imports no CUDA,
# so a rank that then takes a GPU is as fresh as a spawned one.
RANK_PRELOAD = ["torch", "torch.distributed", "collbench.launch", "collbench.collectives", "collbench.timing"]


def run_collectives(
    cfg: CollectivesConfig, world_size: int | None = None, *, drill: FaultDrill | None = None, progress: bool = True
) -> list[BenchResult]:
    """Launch the sweep on `world_size` local processes (default: the largest rank count) and return its rows."""
    import multiprocessing

    import torch.multiprocessing as mp

    backend = resolve_backend(cfg.backend)
    if backend == "nccl-tests":
        raise CollbenchError("backend nccl-tests runs the binaries: use collbench.nccl_tests.run_nccl_tests")
    sweep_points(cfg)  # fail on bad input before starting processes
    world = world_size or max(cfg.rank_counts)
    if world < max(cfg.rank_counts):
        raise CollbenchError(f"world size {world} is smaller than the largest rank count {max(cfg.rank_counts)}")
    if world < 2:
        raise CollbenchError(f"world size {world}: a collective needs at least 2 ranks")
    if backend == "nccl":
        import torch

        if torch.cuda.device_count() < 1:
            raise CollbenchError("backend nccl needs CUDA GPUs and none is visible; use backend=gloo on CPU")
    with tempfile.TemporaryDirectory(prefix="collbench-") as tmp:
        store, result = os.path.join(tmp, "store"), os.path.join(tmp, "result.json")
        multiprocessing.set_forkserver_preload(RANK_PRELOAD)
        ctx = mp.start_processes(
            _worker,
            args=(world, asdict(cfg), store, result, drill, progress),
            nprocs=world,
            join=False,
            start_method="forkserver",
        )
        _wait(ctx, cfg, world)
        if not os.path.exists(result):
            raise CollbenchError("the sweep finished without a result from rank 0; see the ranks' output above")
        return [BenchResult(**row) for row in json.loads(Path(result).read_text())]


def _wait(ctx, cfg: CollectivesConfig, world: int) -> None:
    deadline = time.monotonic() + expected_runtime_s(cfg) + cfg.timeout_s
    try:
        while not ctx.join(timeout=0.5):
            if time.monotonic() > deadline:
                alive = [i for i, p in enumerate(ctx.processes) if p.is_alive()]
                _stop(ctx)
                raise CollbenchError(
                    f"collective sweep timed out: rank(s) {alive} still running after "
                    f"{expected_runtime_s(cfg) + cfg.timeout_s:.0f} s; stopped them. A rank hung; "
                    "check its device and network, or raise collectives.timeout_s"
                )
    except CollbenchError:
        raise
    except Exception as err:  # ProcessRaisedException / ProcessExitedException from torch
        _stop(ctx)
        rank = getattr(err, "error_index", "?")
        detail = str(err).strip().splitlines()
        tail = detail[-1] if detail else type(err).__name__
        raise CollbenchError(
            f"collective sweep failed on rank {rank} of {world}: {tail}. The other ranks were "
            f"stopped (process-group timeout {cfg.timeout_s:.0f} s)."
        ) from None


def _stop(ctx) -> None:
    for p in ctx.processes:
        if p.is_alive():
            os.kill(p.pid, signal.SIGKILL)
    for p in ctx.processes:
        p.join(timeout=5)
