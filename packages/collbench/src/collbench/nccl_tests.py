"""Run the nccl-tests / rccl-tests binaries (`all_reduce_perf` ...) as subprocesses with a collbench sweep.

The same sweep settings map to the tools' flags (-b -e -f/-i -g -w -n -c -d); `mpirun` (any launcher
prefix, e.g. "mpirun -np 8 --bind-to numa") wraps the binary when given. Output is parsed by
`nccl_parse` into the common result schema. A missing binary or launcher is a clear error before
anything runs; a run that exceeds its timeout is killed and reported.
"""

import os
import shlex
import shutil
import subprocess
from pathlib import Path

from collbench.config import CollectivesConfig
from collbench.errors import CollbenchError
from collbench.nccl_parse import BINARY_COLLECTIVES, parse_nccl_tests
from collbench.schema import BenchResult
from collbench.sizes import parse_size

_BINARIES = {name: f"{stem}_perf" for stem, name in BINARY_COLLECTIVES.items()}
_TOOL_TYPES = {
    "float32": "float",
    "float16": "half",
    "bfloat16": "bfloat16",
    "float64": "double",
    "int32": "int32",
    "int64": "int64",
    "int8": "int8",
    "uint8": "uint8",
}


def binary_name(collective: str) -> str:
    """The nccl-tests executable for a collective (all_to_all -> alltoall_perf)."""
    if collective not in _BINARIES:
        raise CollbenchError(f"nccl-tests has no binary for {collective!r}; allowed: {', '.join(_BINARIES)}")
    return _BINARIES[collective]


def find_binary(collective: str, binary_dir: str = "") -> Path:
    """The binary's path in `binary_dir` or on PATH; a clear error naming where it looked otherwise."""
    name = binary_name(collective)
    if binary_dir:
        candidate = Path(binary_dir) / name
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return candidate
        where = f"in {binary_dir}"
    else:
        found = shutil.which(name)
        if found:
            return Path(found)
        where = "on PATH"
    raise CollbenchError(
        f"nccl-tests binary {name!r} not found {where}. Build NVIDIA nccl-tests "
        "(https://github.com/NVIDIA/nccl-tests: make MPI=1) or ROCm rccl-tests "
        "(https://github.com/ROCm/rccl-tests) and pass its build folder as collectives.binary_dir / --binary-dir"
    )


def command_line(cfg: CollectivesConfig, collective: str, dtype: str, binary: Path) -> list[str]:
    """The argv for one collective and dtype, launcher prefix included."""
    if dtype not in _TOOL_TYPES:
        raise CollbenchError(f"dtype {dtype!r} has no nccl-tests name; allowed: {', '.join(_TOOL_TYPES)}")
    args = [
        str(binary),
        "-b",
        str(parse_size(cfg.min_bytes)),
        "-e",
        str(parse_size(cfg.max_bytes)),
        "-g",
        str(cfg.gpus_per_process),
        "-w",
        str(cfg.warmup_iters),
        "-n",
        str(cfg.iters),
        "-c",
        "1" if cfg.check else "0",
        "-d",
        _TOOL_TYPES[dtype],
    ]
    step = parse_size(cfg.step_bytes)
    args += (
        ["-i", str(step)]
        if step
        else ["-f", str(int(cfg.step_factor)) if float(cfg.step_factor).is_integer() else str(cfg.step_factor)]
    )
    prefix = shlex.split(cfg.mpirun) if cfg.mpirun else []
    if prefix and shutil.which(prefix[0]) is None:
        raise CollbenchError(f"launcher {prefix[0]!r} (from collectives.mpirun={cfg.mpirun!r}) not found on PATH")
    return prefix + args


def run_nccl_tests(cfg: CollectivesConfig, log_dir: Path | None = None) -> list[BenchResult]:
    """Run every collective x dtype of the sweep through the binaries; return the parsed rows."""
    rows: list[BenchResult] = []
    binaries = {c: find_binary(c, cfg.binary_dir) for c in cfg.collectives}  # every binary exists before any runs
    for collective, binary in binaries.items():
        for dtype in cfg.dtypes:
            argv = command_line(cfg, collective, dtype, binary)
            try:
                proc = subprocess.run(argv, capture_output=True, text=True, timeout=cfg.timeout_s, check=False)
            except subprocess.TimeoutExpired:
                raise CollbenchError(
                    f"{binary.name} did not finish within collectives.timeout_s={cfg.timeout_s:.0f} s "
                    f"and was killed: {shlex.join(argv)}"
                ) from None
            if log_dir is not None:
                Path(log_dir).mkdir(parents=True, exist_ok=True)
                (Path(log_dir) / f"{binary.name}_{dtype}.log").write_text(proc.stdout + proc.stderr)
            if proc.returncode != 0:
                tail = "\n".join((proc.stderr or proc.stdout).strip().splitlines()[-5:])
                raise CollbenchError(f"{shlex.join(argv)} exited with code {proc.returncode}:\n{tail}")
            for test in parse_nccl_tests(proc.stdout, collective=collective):
                rows.extend(test.results)
    return rows
