"""A node's health check, run by the job before training starts (one task per node under `srun`) and by the
supervisor on a failed job's nodes before resubmitting. Writes `<report dir>/<node>.json`; exit 0 when every
check passed, 76 (`ExitCode.NODE_UNHEALTHY`) when one failed.

Checks, each with its time and what it saw:
- device: the training device is visible and answers (a matmul on it, checked against the CPU's result);
- collective: an all-reduce over every node of the job completes within `--collective-timeout-s` (gloo on CPU,
  NCCL on CUDA); a node that never joins fails it for all (the supervisor then names the missing report);
- checkpoint_room: the checkpoint file system has room for two checkpoints (two of the latest saved one, or
  `--min-free-bytes` before the first save), plus `--test-reserve NODE=BYTES` on a named node (test only: a
  real comparison made to fail on purpose);
- nvidia_smi: no uncorrectable ECC errors and SM clocks near their maximum under load (zaya_train.cluster.nvidia);
  skipped, with the reason, where there is no nvidia-smi.

    python -m zaya_train.cluster.health --report-dir RUN/health/job-1 --checkpoint-dir RUN/checkpoints
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from dataclasses import asdict, dataclass
from datetime import timedelta
from pathlib import Path

from zaya_config.atomic import write_text_atomic
from zaya_config.train_checkpoint.layout import read_latest, step_dirs

from zaya_train.cluster.straggler import node_name
from zaya_train.resilience.exit_codes import ExitCode


@dataclass
class Check:
    """One check's verdict: passed, failed, or skipped (ok is None) with what it saw."""

    name: str
    ok: bool | None
    detail: str
    seconds: float = 0.0


def _timed(name: str, fn) -> Check:
    start = time.perf_counter()
    try:
        ok, detail = fn()
    except Exception as err:  # a check that cannot run has failed, and says how
        ok, detail = False, f"{type(err).__name__}: {err}"
    return Check(name, ok, detail, round(time.perf_counter() - start, 4))


def check_device(device: str) -> tuple[bool | None, str]:
    """The device is visible and a small matmul on it gives the CPU's answer."""
    import torch

    if device.startswith("cuda") and not torch.cuda.is_available():
        return False, "torch sees no CUDA device"
    a = torch.arange(64 * 64, dtype=torch.float32).reshape(64, 64) / 4096
    got = (a.to(device) @ a.to(device)).cpu()
    if not torch.allclose(got, a @ a, rtol=1e-3, atol=1e-3):
        return False, f"matmul on {device} differs from the CPU's"
    return True, f"{device} answers ({torch.cuda.get_device_name(device) if device.startswith('cuda') else 'cpu'})"


def checkpoint_bytes(checkpoint_dir: Path) -> int | None:
    """Bytes of the latest committed checkpoint, or None before the first save."""
    step = read_latest(checkpoint_dir) if checkpoint_dir.is_dir() else None
    folder = step_dirs(checkpoint_dir).get(step) if step is not None else None
    if folder is None:
        return None
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def check_room(checkpoint_dir: Path, min_free_bytes: int, reserve_bytes: int) -> tuple[bool | None, str]:
    """Free bytes on the checkpoint file system >= two checkpoints (+ a test reserve)."""
    latest = checkpoint_bytes(checkpoint_dir)
    need = (2 * latest if latest is not None else min_free_bytes) + reserve_bytes
    probe = checkpoint_dir
    while not probe.exists():
        probe = probe.parent
    free = shutil.disk_usage(probe).free
    basis = f"2 x {latest} B (latest checkpoint)" if latest is not None else f"{min_free_bytes} B (no checkpoint yet)"
    if reserve_bytes:
        basis += f" + {reserve_bytes} B test reserve"
    return free >= need, f"{free} B free at {probe}, need {need} B = {basis}"


def check_nvidia(min_clock_fraction: float) -> tuple[bool | None, str]:
    """nvidia-smi's ECC and clock report, or skipped off NVIDIA machines."""
    from zaya_train.cluster.nvidia import parse_problems, parse_rows, query

    text = query()
    if text is None:
        return None, "no nvidia-smi on this node (not an NVIDIA machine)"
    problems = parse_problems(text, min_clock_fraction)
    if problems:
        return False, "; ".join(f"GPU {p.index}: {p.reason}" for p in problems)
    return True, f"{len(parse_rows(text))} GPU(s): no uncorrectable ECC errors, clocks sane"


def check_collective(device: str, timeout_s: float) -> tuple[bool | None, str]:
    """An all-reduce of ones over every task of this job step (srun), within the bound."""
    import torch
    import torch.distributed as dist

    rank, world = int(os.environ.get("SLURM_PROCID", "0")), int(os.environ.get("SLURM_NTASKS", "1"))
    backend = "nccl" if device.startswith("cuda") else "gloo"
    init = f"tcp://{os.environ.get('MASTER_ADDR', '127.0.0.1')}:{int(os.environ.get('MASTER_PORT', '29500')) + 1}"
    dist.init_process_group(backend, init_method=init, rank=rank, world_size=world,
                            timeout=timedelta(seconds=timeout_s))  # fmt: skip
    try:
        start = time.perf_counter()
        ones = torch.ones(1024, device=device)
        dist.all_reduce(ones)
        took = time.perf_counter() - start
        if not torch.all(ones == world):
            return False, f"all-reduce over {world} ranks gave {ones[0].item()}, not {world}"
        ok = took <= timeout_s
        return ok, f"all-reduce over {world} node(s) ({backend}) in {took * 1e3:.1f} ms (bound {timeout_s} s)"
    finally:
        dist.destroy_process_group()


def parse_reserve(items: list[str]) -> dict[str, int]:
    """`NODE=BYTES` pairs (the test-only reserve); a malformed one is refused by name."""
    out = {}
    for item in items:
        node, sep, value = item.partition("=")
        if not sep or not node or not value.isdigit():
            raise SystemExit(f"zaya health: --test-reserve {item!r}: expected NODE=BYTES, e.g. zaya-n2=1000000000000")
        out[node] = int(value)
    return out


def main(argv: list[str] | None = None) -> int:
    """Run every check on this node, write its report, exit 0 or 76."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--report-dir", type=Path, required=True)
    parser.add_argument("--checkpoint-dir", type=Path, required=True)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--collective-timeout-s", type=float, default=30.0)
    parser.add_argument("--no-collective", action="store_true", help="skip the all-reduce (a lone node check)")
    parser.add_argument("--min-free-bytes", type=int, default=1 << 30)
    parser.add_argument("--min-clock-fraction", type=float, default=0.5)
    parser.add_argument("--test-reserve", action="append", default=[], metavar="NODE=BYTES")
    args = parser.parse_args(argv)
    if args.collective_timeout_s <= 0 or args.min_free_bytes < 0 or not 0 <= args.min_clock_fraction <= 1:
        raise SystemExit("zaya health: --collective-timeout-s > 0, --min-free-bytes >= 0, "
                         "--min-clock-fraction in [0, 1]")  # fmt: skip
    node = node_name()
    reserve = parse_reserve(args.test_reserve).get(node, 0)
    checks = [
        _timed("device", lambda: check_device(args.device)),
        _timed("checkpoint_room", lambda: check_room(args.checkpoint_dir, args.min_free_bytes, reserve)),
        _timed("nvidia_smi", lambda: check_nvidia(args.min_clock_fraction)),
    ]
    if args.no_collective:
        checks.append(Check("collective", None, "--no-collective"))
    else:  # last: every node joins it whatever its own checks said, so the others are not left waiting
        checks.append(_timed("collective", lambda: check_collective(args.device, args.collective_timeout_s)))
    healthy = all(c.ok is not False for c in checks)
    report = {"node": node, "healthy": healthy, "time_unix": round(time.time(), 3),
              "job_id": os.environ.get("SLURM_JOB_ID"), "checks": [asdict(c) for c in checks]}  # fmt: skip
    args.report_dir.mkdir(parents=True, exist_ok=True)
    write_text_atomic(args.report_dir / f"{node}.json", json.dumps(report, indent=1))
    for c in checks:
        mark = {True: "ok", False: "FAILED", None: "skipped"}[c.ok]
        print(f"health {node} {c.name}: {mark}: {c.detail}", file=sys.stderr if c.ok is False else sys.stdout)
    return 0 if healthy else int(ExitCode.NODE_UNHEALTHY)


if __name__ == "__main__":
    sys.exit(main())
