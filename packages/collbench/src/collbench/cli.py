"""`zaya bench ...`: parse nccl-tests output, run collective sweeps, characterize a device, size a model.

Heavy imports (torch, zarr, matplotlib, hydra) happen inside the commands so `zaya --help` stays fast.
"""

from pathlib import Path

import typer
from rich.console import Console
from rich.table import Table
from zaya_config.cli_errors import fail, reports
from zaya_config.errors import ZayaConfigError

from collbench.errors import CollbenchError

app = typer.Typer(
    help="Collectives, GEMM and bandwidth benchmarks; nccl-tests parsing; sizing rules.", no_args_is_help=True
)
console = Console()


def _print_rows(rows: list, title: str) -> None:
    table = Table(
        "collective", "n", "dtype", "size (B)", "count", "place", "time (us)", "algbw", "busbw", "#wrong", title=title
    )
    for r in rows:
        table.add_row(
            r.collective,
            str(r.n_ranks),
            r.dtype,
            str(r.size_bytes),
            str(r.count),
            "in" if r.in_place else "out",
            f"{r.time_us:.2f}",
            f"{r.algbw_gbps:.2f}",
            f"{r.busbw_gbps:.2f}",
            "N/A" if r.wrong < 0 else str(r.wrong),
        )
    console.print(table)


@app.command("parse")
@reports(CollbenchError, ZayaConfigError)
def parse(
    file: Path = typer.Argument(..., help="stdout of an nccl-tests / rccl-tests binary"),
    collective: str = typer.Option(None, "--collective", "-c", help="collective when the log does not name it"),
    ranks: int = typer.Option(None, "--ranks", "-n", help="rank count when the log lists no devices"),
    csv_out: Path = typer.Option(None, "--csv", help="also write the rows as collbench CSV here"),
) -> None:
    """Parse nccl-tests/rccl-tests output into collbench's result schema and print it."""
    from collbench.nccl_parse import parse_nccl_tests_file
    from collbench.results_io import write_csv

    tests = parse_nccl_tests_file(file, collective=collective, n_ranks=ranks)
    rows = [r for t in tests for r in t.results]
    for t in tests:
        _print_rows(t.results, f"{t.collective} ({t.tool}, {t.n_ranks} ranks, {', '.join(t.hosts) or 'host ?'})")
        console.print(f"avg bus bandwidth {t.avg_busbw_gbps:g} GB/s, out of bounds {t.out_of_bounds}")
    if csv_out:
        write_csv(rows, csv_out)
        console.print(f"wrote {len(rows)} rows to {csv_out}")


def _sweep_config(
    ops: list[str] | None,
    min_bytes: str,
    max_bytes: str,
    factor: float,
    ranks: list[int] | None,
    dtypes: list[str] | None,
    iters: int,
    warmup: int,
    backend: str,
    timeout_s: float,
    **extra: object,
):
    from collbench.config import CollectivesConfig

    cfg = CollectivesConfig(
        backend=backend,
        min_bytes=min_bytes,
        max_bytes=max_bytes,
        step_factor=factor,
        iters=iters,
        warmup_iters=warmup,
        timeout_s=timeout_s,
        **extra,
    )  # type: ignore[arg-type]
    if ops:
        cfg.collectives = list(ops)
    if ranks:
        cfg.rank_counts = list(ranks)
    if dtypes:
        cfg.dtypes = list(dtypes)
    try:
        cfg.validate()
    except ValueError as err:
        fail(err)
    return cfg


def _finish(rows: list, out: Path, link_gbps: float | None) -> None:
    from collbench.plots import plot_busbw
    from collbench.results_io import write_results

    _print_rows(rows, "collectives")
    csv_path, zarr_path = write_results(rows, out)
    plots = plot_busbw(rows, out / "plots", link_gbps)
    console.print(f"wrote {csv_path}, {zarr_path} and {len(plots)} plot(s) under {out / 'plots'}")


_OPS = typer.Option(None, "--op", help="collective (repeat for several); default: all")
_MIN = typer.Option("1K", "-b", "--min-bytes", help="smallest message, e.g. 8, 1K, 128M")
_MAX = typer.Option("64K", "-e", "--max-bytes", help="largest message")
_FACTOR = typer.Option(2.0, "-f", "--factor", help="size multiplier between steps")
_RANKS = typer.Option(None, "--ranks", help="rank count (repeat for several sub-group sizes)")
_DTYPES = typer.Option(None, "--dtype", help="dtype (repeat), e.g. float32, bfloat16")
_ITERS = typer.Option(5, "-n", "--iters")
_WARMUP = typer.Option(2, "-w", "--warmup")
_OUT = typer.Option(Path("collbench-out"), "-o", "--out", help="output folder")
_TIMEOUT = typer.Option(120.0, "--timeout", help="seconds before a hung rank ends the run")


@app.command("collectives")
@reports(CollbenchError, ZayaConfigError)
def collectives(
    ops: list[str] = _OPS,
    min_bytes: str = _MIN,
    max_bytes: str = _MAX,
    factor: float = _FACTOR,
    ranks: list[int] = _RANKS,
    dtypes: list[str] = _DTYPES,
    iters: int = _ITERS,
    warmup: int = _WARMUP,
    backend: str = typer.Option("auto", help="gloo, nccl or auto"),
    out: Path = _OUT,
    timeout_s: float = _TIMEOUT,
    link_gbps: float = typer.Option(None, help="link peak to draw"),
) -> None:
    """Sweep collectives through torch.distributed on local processes; CSV, zarr and busbw plots."""
    from collbench.launch import run_collectives

    cfg = _sweep_config(ops, min_bytes, max_bytes, factor, ranks, dtypes, iters, warmup, backend, timeout_s)
    rows = run_collectives(cfg)
    _finish(rows, out, link_gbps)


@app.command("nccl")
@reports(CollbenchError, ZayaConfigError)
def nccl(
    ops: list[str] = _OPS,
    min_bytes: str = _MIN,
    max_bytes: str = _MAX,
    factor: float = _FACTOR,
    dtypes: list[str] = _DTYPES,
    iters: int = _ITERS,
    warmup: int = _WARMUP,
    out: Path = _OUT,
    timeout_s: float = _TIMEOUT,
    binary_dir: str = typer.Option("", help="folder of all_reduce_perf ..."),
    mpirun: str = typer.Option("", help='launcher prefix, e.g. "mpirun -np 8"'),
    gpus: int = typer.Option(1, "-g", help="GPUs per process (nccl-tests -g)"),
    link_gbps: float = typer.Option(None, help="link peak to draw"),
) -> None:
    """Run the nccl-tests / rccl-tests binaries with the same sweep and collect their tables."""
    from collbench.nccl_tests import run_nccl_tests

    cfg = _sweep_config(
        ops,
        min_bytes,
        max_bytes,
        factor,
        None,
        dtypes,
        iters,
        warmup,
        "nccl-tests",
        timeout_s,
        binary_dir=binary_dir,
        mpirun=mpirun,
        gpus_per_process=gpus,
    )
    rows = run_nccl_tests(cfg, log_dir=out / "nccl-tests-logs")
    _finish(rows, out, link_gbps)


@app.command("merge")
@reports(CollbenchError, ZayaConfigError)
def merge(
    sweep_dir: Path = typer.Argument(..., help="a Hydra multirun folder of characterize jobs"),
    link_gbps: float = typer.Option(None, help="link peak to draw"),
) -> None:
    """Merge every job's collectives.csv into <sweep_dir>/merged (CSV, zarr, plots)."""
    from collbench.plots import plot_busbw
    from collbench.results_io import merge_multirun

    rows = merge_multirun(sweep_dir)
    plot_busbw(rows, sweep_dir / "merged" / "plots", link_gbps)
    console.print(f"merged {len(rows)} rows from {len({r.job for r in rows})} job(s) into {sweep_dir / 'merged'}")


def _compose(base: list[str], overrides: list[str] | None):
    from zaya_config import compose

    return compose("zaya", base + list(overrides or []))


@app.command("characterize")
@reports(CollbenchError, ZayaConfigError)
def characterize(
    out: Path = typer.Argument(..., help="output folder"),
    overrides: list[str] = typer.Argument(None, help="Hydra overrides, e.g. bench.gemm.iters=3"),
) -> None:
    """GEMM, bandwidth (and collective) sweeps on this machine; writes the measured hardware preset."""
    from zaya_config import validate_config

    from collbench.characterize import run_characterization

    cfg = _compose(["+bench=default", "+model=zaya1-tiny"], overrides)
    objs = validate_config(cfg)
    summary = run_characterization(objs["bench"], objs["hardware"], out, objs.get("model"))
    console.print_json(data=summary["measured"])
    console.print("use the measured ceilings with: " + " ".join(summary["override"]), markup=False)


@app.command("size")
@reports(CollbenchError, ZayaConfigError)
def size(
    out: Path = typer.Argument(..., help="output folder"),
    overrides: list[str] = typer.Argument(None, help="e.g. hardware=h200 model=zaya1-base sizing=zaya1-base"),
) -> None:
    """MoE width study and dimension rules for a hardware profile; writes the recommended zaya-model config."""
    from zaya_config import validate_config
    from zaya_model import ZayaConfig

    from collbench.sizing.study import run_sizing

    cfg = _compose(["+sizing=default", "+model=zaya1-tiny"], overrides)
    objs = validate_config(cfg)
    outcome = run_sizing(objs["sizing"], ZayaConfig.from_dict(cfg.model), objs["hardware"], out)
    c = outcome.chosen
    console.print(
        f"recommended: {c.num_experts} experts x {c.moe_intermediate_size}, top-{c.num_experts_per_tok} "
        f"-> {outcome.files['recommended']}"
    )
